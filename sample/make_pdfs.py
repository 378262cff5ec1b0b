"""Generate the PDF documents of the Larkspur sample handbook.

Run from anywhere:  .venv/bin/python sample/make_pdfs.py
Writes hr/code-of-conduct.pdf and ops/warehouse-safety.pdf under sample/handbook/.
Needs fpdf2. Output is deterministic (fixed creation date) so re-running does
not change the files unless the text below changes.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from fpdf import FPDF

HERE = Path(__file__).resolve().parent
OUT = HERE / "handbook"
FIXED_DATE = _dt.datetime(2025, 1, 1, tzinfo=_dt.UTC)

# A document is metadata plus a list of blocks:
#   ("h1", text) title, ("h2", text) section, ("h3", text) subsection,
#   ("p", text) paragraph, ("ul", [items]) bullet list.

CODE_OF_CONDUCT = {
    "path": "hr/code-of-conduct.pdf",
    "meta": {
        "title": "Code of Conduct",
        "policy_id": "HR-COC",
        "owner": "#people-team",
        "effective": "2025-01-01",
        "sensitivity": "internal",
        "lang": "en",
    },
    "blocks": [
        ("h1", "Code of Conduct"),
        ("p", "Policy ID: HR-COC. Owner: #people-team. Effective: 1 January 2025."),
        ("h2", "1. Purpose and Scope"),
        ("p", "This Code of Conduct sets out how everyone at Larkspur Trading Co. is expected to behave: "
              "towards each other, towards our customers and suppliers, and towards the communities where we "
              "trade. It applies to all employees, directors, contractors and temporary staff in our offices, "
              "stores and warehouses in Boston, London, Dubai and Riyadh. Where local law sets a stricter "
              "standard, local law applies."),
        ("p", "The Code cannot cover every situation. When you are unsure, ask yourself whether the action is "
              "legal, fair, and something you would be comfortable explaining to a colleague you respect. If the "
              "answer to any of these is no, stop and ask for advice."),
        ("h2", "2. Respect at Work"),
        ("p", "We treat everyone with dignity. Harassment, bullying and discrimination on the grounds of race, "
              "colour, religion, sex, sexual orientation, gender identity, age, disability, nationality, "
              "pregnancy or any other characteristic protected by law are not tolerated, whether in person, in "
              "writing, on Slack or at work social events."),
        ("ul", [
            "Address people by the name and pronouns they ask you to use.",
            "Disagree with ideas, never attack the person.",
            "Respect religious observance, including prayer times and fasting during Ramadan, when you plan meetings and events.",
            "Jokes that demean a group of people are never acceptable, even among friends.",
        ]),
        ("h2", "3. Conflicts of Interest"),
        ("p", "A conflict of interest arises when your personal interests could influence, or appear to influence, "
              "a decision you make for the company. Examples include owning shares in a supplier, a close relative "
              "working for a competitor, or hiring a family member."),
        ("p", "Declare any actual or potential conflict to your manager and in the conflicts register in the HR "
              "portal within 10 working days of becoming aware of it. A declared conflict is rarely a problem; an "
              "undeclared one may lead to disciplinary action."),
        ("h2", "4. Gifts and Hospitality"),
        ("h3", "4.1 Receiving Gifts"),
        ("p", "You may accept occasional gifts from suppliers or business partners worth up to USD 100 (or the "
              "local equivalent) per gift. Any gift worth more than USD 100 must be declared in the gift register "
              "within 5 working days, and the Legal team will decide whether you may keep it, share it with your "
              "team or return it. Never accept cash, gift cards, vouchers or loans, whatever the amount."),
        ("h3", "4.2 Hospitality"),
        ("p", "Modest business meals are a normal part of building relationships. Hospitality worth more than "
              "USD 250 per person, or any invitation that includes travel or an overnight stay, needs approval "
              "from your director before you accept. Do not accept any gift or hospitality from a supplier "
              "during a tender in which that supplier is taking part."),
        ("h3", "4.3 Giving Gifts"),
        ("p", "The same limits apply to gifts we give. Gifts to government officials, including customs officers "
              "and inspectors, are never allowed, apart from branded items of trivial value such as a pen or a "
              "cap."),
        ("h2", "5. Anti-Bribery and Corruption"),
        ("p", "Larkspur does not offer, pay, request or accept bribes, in any country, directly or through agents. "
              "This includes facilitation payments: small unofficial payments to speed up a routine action such as "
              "clearing goods through customs. If you are asked for such a payment, refuse, and report the request "
              "to Legal within 24 hours. If you are threatened with harm, your safety comes first: pay, leave, and "
              "report it immediately."),
        ("h2", "6. Confidential Information"),
        ("p", "Protect information about our customers, suppliers, prices, plans and colleagues. Share it only "
              "with people who need it for their work, and only through company systems. Your duty of "
              "confidentiality continues after you leave Larkspur. Follow the IT Security Policy and the "
              "Acceptable Use Policy when you handle company data."),
        ("h2", "7. Fair Dealing"),
        ("ul", [
            "Describe our products honestly. Never claim a product is waterproof, fire-resistant or rated for a temperature unless the specification says so.",
            "Do not discuss prices, margins or customers with competitors, including at trade shows.",
            "Choose suppliers on quality, price and reliability, and treat all bidders equally.",
            "Keep accurate records. Never alter a receipt, a stock count or a timesheet.",
        ]),
        ("h2", "8. Outside Employment"),
        ("p", "You may take on a second job or run a side business in your own time, provided it does not compete "
              "with Larkspur, does not use company time, equipment or information, and does not affect your "
              "performance. Tell your manager and the People team in writing before you start. Working for a "
              "competing outdoor-goods retailer or for one of our suppliers is not allowed."),
        ("h2", "9. Speaking Up"),
        ("p", "If you see something that breaks this Code, the law or our policies, we want to hear about it. You "
              "can raise a concern with your manager, the People team, the Legal team, or through the independent "
              "ethics hotline, which is available 24 hours a day in English and Arabic and accepts anonymous "
              "reports."),
        ("p", "Every report is acknowledged within 5 working days. We protect people who speak up in good faith: "
              "retaliation against anyone who raises a concern or helps with an investigation is itself a serious "
              "breach of this Code and will lead to disciplinary action."),
        ("h2", "10. Breaches of the Code"),
        ("p", "Breaching this Code may lead to disciplinary action, up to and including dismissal, and may also be "
              "reported to the authorities where the law requires it. Managers who ignore a breach they know about "
              "are also responsible."),
        ("h2", "11. Annual Acknowledgement"),
        ("p", "Every employee completes the Code of Conduct training and confirms that they have read this Code "
              "when they join, and again every year by 31 January. New starters complete it within 30 days of their "
              "start date. Completion is tracked in the HR portal and reported to directors each month."),
    ],
}

WAREHOUSE_SAFETY = {
    "path": "ops/warehouse-safety.pdf",
    "meta": {
        "title": "Warehouse Health and Safety Rules",
        "policy_id": "OPS-WHS",
        "owner": "#warehouse-ops",
        "effective": "2025-05-01",
        "sensitivity": "internal",
        "lang": "en",
    },
    "blocks": [
        ("h1", "Warehouse Health and Safety Rules"),
        ("p", "Policy ID: OPS-WHS. Owner: #warehouse-ops. Effective: 1 May 2025."),
        ("h2", "1. Scope"),
        ("p", "These rules apply to everyone who enters a Larkspur Trading Co. warehouse: the Boston distribution "
              "centre in Canton, Massachusetts, and the Dubai distribution centre in Jebel Ali, together with the "
              "stockrooms of our stores where stated. They apply to employees, agency workers, drivers and "
              "visitors. The warehouse manager on duty has the final word on safety and may stop any activity "
              "that looks unsafe."),
        ("h2", "2. Induction and Training"),
        ("ul", [
            "Nobody may work on the warehouse floor before completing the safety induction, which takes 3 hours and is held on every new starter's first day.",
            "Refresher training is required every 12 months.",
            "Agency workers receive the same induction as employees, before their first shift.",
        ]),
        ("h2", "3. Personal Protective Equipment"),
        ("p", "The company provides all personal protective equipment free of charge. The following must be worn "
              "at all times on the warehouse floor:"),
        ("ul", [
            "Safety boots with toe protection.",
            "A high-visibility vest: yellow for employees, orange for visitors and drivers.",
            "A hard hat in the high racking aisles (aisles 20 to 48 in Boston, zone C in Dubai).",
            "Cut-resistant gloves when opening cartons with a blade.",
        ]),
        ("h2", "4. Forklifts and Powered Equipment"),
        ("h3", "4.1 Operators"),
        ("p", "Only staff holding a current forklift licence, issued after the company's certified course, may "
              "operate a forklift, reach truck or powered pallet truck. Licences are renewed every 3 years. Operators "
              "complete the pre-use checklist at the start of every shift and take any faulty truck out of service."),
        ("h3", "4.2 Traffic Rules"),
        ("ul", [
            "The speed limit inside the warehouse is 8 km/h (5 mph).",
            "Pedestrians stay on the marked walkways and keep at least 3 metres away from a working forklift.",
            "Mobile phones may not be used while driving any powered equipment.",
            "Loads must never be raised while the truck is moving.",
        ]),
        ("h2", "5. Manual Handling"),
        ("p", "Use lifting aids such as pallet trucks and trolleys wherever possible. No one person may lift a load "
              "heavier than 25 kg; heavier loads need a team lift or a mechanical aid. Cartons over 15 kg are marked "
              "with an orange HEAVY label at goods-in. Tents, kayaks and other long items are always carried by two "
              "people."),
        ("h2", "6. Racking"),
        ("p", "Racking is inspected visually every week by a trained team leader and by an external specialist once a "
              "year. Report any bent upright, missing beam lock or damaged pallet to the warehouse manager at once; "
              "the bay is closed until it is repaired. Never climb racking, and never exceed the load limit shown on "
              "the sign at the end of each run."),
        ("h2", "7. Hazardous Goods"),
        ("p", "Gas canisters, stove fuel, fire lighters and lithium batteries are hazardous goods. Store them only in "
              "the caged hazardous goods area, which holds a maximum of 500 gas canisters at any time. Damaged or "
              "leaking canisters are placed in the sand-filled quarantine bin and reported to the warehouse manager. "
              "No smoking, vaping or naked flames are permitted anywhere on site."),
        ("h2", "8. Working in Heat"),
        ("p", "In Dubai, outdoor work in direct sunlight, including loading in the open yard, is not permitted "
              "between 12:30 and 15:00 from 15 June to 15 September. During this period yard work is scheduled in "
              "the early morning or evening. Cool drinking water and shaded rest areas are available at all times, "
              "and team leaders check on yard staff at least every 30 minutes when the temperature is above 40 "
              "degrees Celsius. In Boston, the same checks apply during heat advisories issued by the weather service."),
        ("h2", "9. Reporting Accidents and Near Misses"),
        ("ul", [
            "Report every accident, injury or near miss to the warehouse manager and in the incident log within 24 hours.",
            "Serious injuries, fires and chemical spills are reported immediately by phone, after calling emergency services.",
            "Do not move equipment involved in a serious incident until the investigation team releases it.",
        ]),
        ("h2", "10. Visitors and Drivers"),
        ("p", "Visitors sign in at the gatehouse, receive an orange vest and are escorted at all times. Delivery "
              "drivers stay in the drivers' waiting area while their vehicle is loaded or unloaded, and hand their "
              "keys to the loading bay supervisor until loading is complete."),
        ("h2", "11. Emergencies"),
        ("p", "Fire evacuation drills take place every 6 months. When the alarm sounds, stop work, make equipment "
              "safe, and walk to the assembly point at the main gate. Fire wardens carry out a headcount using the "
              "sign-in records. Do not re-enter the building until the fire service or the warehouse manager gives "
              "the all-clear."),
    ],
}

DOCUMENTS = [CODE_OF_CONDUCT, WAREHOUSE_SAFETY]


class HandbookPDF(FPDF):
    def __init__(self, title: str):
        super().__init__(format="A4")
        self.doc_title = title
        self.set_margins(22, 20, 22)
        self.set_auto_page_break(auto=True, margin=20)

    # No running header: extracted text would put it in the middle of the section that spans the
    # page break. The footer holds only "Page N", which text extractors can recognise and drop.

    def footer(self):
        self.set_y(-14)
        self.set_font("Helvetica", "I", 8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 8, f"Page {self.page_no()}", align="C")
        self.set_text_color(0, 0, 0)


def render(doc: dict) -> Path:
    meta = doc["meta"]
    pdf = HandbookPDF(meta["title"])
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(meta["title"])
    pdf.set_author("Larkspur Trading Co.")
    pdf.set_subject(f"policy_id={meta['policy_id']}")
    pdf.set_keywords(" ".join(f"{k}={v}" for k, v in meta.items() if k != "title"))
    pdf.set_lang(meta["lang"])
    pdf.add_page()
    width = pdf.epw
    for kind, content in doc["blocks"]:
        if kind == "h1":
            pdf.start_section(content, level=0)
            pdf.set_font("Helvetica", "B", 20)
            pdf.multi_cell(width, 10, content, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif kind == "h2":
            pdf.ln(3)
            pdf.start_section(content, level=1)
            pdf.set_font("Helvetica", "B", 14)
            pdf.multi_cell(width, 8, content, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
        elif kind == "h3":
            pdf.ln(1)
            pdf.start_section(content, level=2)
            pdf.set_font("Helvetica", "B", 12)
            pdf.multi_cell(width, 7, content, new_x="LMARGIN", new_y="NEXT")
        elif kind == "p":
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(width, 6, content, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif kind == "ul":
            pdf.set_font("Helvetica", "", 11)
            for item in content:
                pdf.set_x(pdf.l_margin + 4)
                pdf.multi_cell(width - 4, 6, f"- {item}", new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            pdf.ln(1)
        else:
            raise ValueError(f"unknown block kind {kind!r}")
    out = OUT / doc["path"]
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out))
    return out


def main() -> None:
    for doc in DOCUMENTS:
        path = render(doc)
        print(f"wrote {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
