"""verify's gold needles of a conversation are found when it is first scanned (issue 31): a
pack of one conversation's questions reads no other conversation's text, and every
conversation's needles (and those of a file of no known conversation) are what the eager
scan found."""

from __future__ import annotations

from memorybench.pack.verify.needles import MIN_GOLD_LENGTH, Needles, _grams, date_forms


def _eager(conversations, with_summaries: bool, instructions: str) -> dict:
    """The needles as verify found them before, every conversation up front."""
    gold_of: dict[str, str] = {}
    for c in conversations:
        for q in c.questions:
            for gold in q.gold_strings():
                needle = gold.strip().lower()
                if len(needle) >= MIN_GOLD_LENGTH:
                    gold_of.setdefault(needle, q.question_id)
    grams = {n: _grams(n) for n in gold_of}
    by_sample: dict = {}
    absent = set(gold_of)
    for c in conversations:
        text = c.text_blob() + "\n" + "\n".join(f for s in c.sessions for f in date_forms(s.date_time))
        if with_summaries:
            text += "\n" + "\n".join(c.session_summaries[k] for k in sorted(c.session_summaries))
        low = text.lower() + "\n" + instructions.lower()
        text_grams = _grams(low)
        needles = [(n, grams[n]) for n in gold_of if not (grams[n] <= text_grams and n in low)]
        by_sample[c.sample_id] = needles
        absent &= {n for n, _ in needles}
    by_sample[None] = [(n, grams[n]) for n in gold_of if n in absent]
    return by_sample


def test_one_conversation_scanned_reads_only_its_text(conversations) -> None:
    needles = Needles(conversations, with_summaries=False, instructions="Answer. Not mentioned.")
    first = conversations[0]
    gold = next(n for n, _ in needles.by_sample[first.sample_id])
    assert gold in needles.scan(first.sample_id, f"... {gold} ...")
    assert list(needles._found) == [0]
    assert needles.sample(conversations[3].sample_id) == conversations[3].sample_id and needles.sample("conv-0") is None
    assert list(needles._found) == [0]  # knowing a sample id reads nothing


def test_a_session_date_in_another_form_is_the_conversations_own_text(conversations) -> None:
    """A memory that writes a session's date as "May 2023" (a library's "happened in May 2023")
    repeats the conversation's date: no needle of its own, though another conversation's gold."""
    needles = Needles(conversations, with_summaries=False)
    for c in conversations:
        own = {f for s in c.sessions for f in date_forms(s.date_time)}
        assert own and not own & {n for n, _ in needles.by_sample[c.sample_id]}
    dated = {f for c in conversations for s in c.sessions for f in date_forms(s.date_time)}
    golds = {n for n in needles.gold_of if n in dated}
    assert golds  # LoCoMo's temporal golds are such dates: each is a needle where it is not a session's date
    forms = {c.sample_id: {f for s in c.sessions for f in date_forms(s.date_time)} for c in conversations}
    gold, other = next(
        (g, c) for g in sorted(golds) for c in conversations if g not in forms[c.sample_id] and g not in c.text_blob().lower()
    )
    assert gold in needles.scan(other.sample_id, f"... {gold} ...")


def test_the_years_next_to_a_sessions_year_are_what_last_and_next_year_resolve_to() -> None:
    forms = date_forms("1:56 pm on 8 May, 2023")
    assert "2022" in forms and "2024" in forms and "2021" not in forms


def test_the_needles_are_the_eager_scans(conversations) -> None:
    for with_summaries in (False, True):
        needles = Needles(conversations, with_summaries=with_summaries, instructions="Not mentioned in the conversation")
        eager = _eager(conversations, with_summaries, "Not mentioned in the conversation")
        assert list(needles.by_sample) == list(eager) and len(needles.by_sample) == len(eager)
        assert needles.by_sample[None] == eager[None]  # a file of no known conversation, first: all are read
        assert {k: needles.by_sample[k] for k in needles.by_sample} == eager
        assert "conv-26" in needles.by_sample and None in needles.by_sample and "conv-0" not in needles.by_sample


def test_a_number_gold_inside_an_id_or_a_timestamp_is_chance(conversations) -> None:
    """A library's store holds uuids and timestamps: "2020" inside "9d020208-..." or the
    microseconds "...920217" is no year given to a model; the same digits standing alone are."""
    needles = Needles(conversations, with_summaries=False)
    for c in conversations:
        numbers = sorted(n for n, _ in needles.by_sample[c.sample_id] if n.isdigit())
        if not numbers:
            continue
        gold = numbers[0]
        assert gold in needles.scan(c.sample_id, f"in {gold}, they moved")
        assert gold in needles.scan(c.sample_id, f"({gold}-05-01)")
        assert not needles.scan(c.sample_id, f"id 9d{gold}08-33f9, at 10:31:{gold[:2]}.9{gold}7")
        return
    raise AssertionError("no all-digit gold among the needles of any conversation")
