from pegasus.merge.rules import StoredEntity, band, match, resembles, similarity
from pegasus.models import CleanEntity
from pegasus.text import content_words, nickname_match


def proposed(name, kind="PERSON", aliases=(), hint=None):
    return CleanEntity(name=name, kind=kind, aliases=list(aliases), properties={},
                       confidence=0.9, same_as_hint=hint)


def stored(name, kind="PERSON", aliases=(), id=None):
    return StoredEntity(id=id or name, name=name, kind=kind, aliases=list(aliases))


def test_exact_match_is_case_and_space_folded():
    found = match(proposed("  sarah   KIM"), [stored("Sarah Kim")])
    assert found.rule == "exact" and found.merge_target.name == "Sarah Kim"


def test_same_name_different_kind_never_merges():
    found = match(proposed("Sam", "PERSON"), [stored("Sam", "ORG")])
    assert found.merge_target is None and found.review_candidates == []


def test_alias_of_one_node_merges_and_of_two_goes_to_review():
    one = match(proposed("Sarah K"), [stored("Sarah Kim", aliases=["Sarah K"]), stored("Bob")])
    assert one.rule == "alias" and one.merge_target.name == "Sarah Kim"
    two = match(proposed("SK"), [stored("Sarah Kim", aliases=["SK"]),
                                 stored("Sam Kerr", aliases=["sk"])])
    assert two.merge_target is None
    assert {c.name for c in two.review_candidates} == {"Sarah Kim", "Sam Kerr"}


def test_nickname_group_merges_bill_into_william_smith():
    found = match(proposed("Bill"), [stored("William Smith"), stored("Robert Jones")])
    assert found.rule == "nickname" and found.merge_target.name == "William Smith"


def test_nickname_with_two_matches_goes_to_review():
    found = match(proposed("Bill"), [stored("William Smith"), stored("Will Turner")])
    assert found.merge_target is None and len(found.review_candidates) == 2


def test_nickname_needs_compatible_surnames():
    assert nickname_match("Bill Smith", "William Smith")
    assert not nickname_match("Bill Jones", "William Smith")
    assert not nickname_match("Bill", "Bill")  # equal names are rule 1


def test_sarah_kim_versus_sarah_only_nominates():
    found = match(proposed("Sarah Kim"), [stored("Sarah")])
    assert found.merge_target is None and [c.name for c in found.review_candidates] == ["Sarah"]


def test_weak_resemblance_rules():
    assert similarity("Jonathon", "Jonathan") > 0.8 and resembles("Jonathon", "Jonathan")
    assert resembles("Acme Corp", "Acme")  # containment
    assert resembles("New York Times", "New York Post")  # two of three words each
    assert not resembles("Sarah", "Bob")


def test_hint_only_nominates():
    found = match(proposed("The boss", hint="Sarah"), [stored("Sarah")])
    assert found.merge_target is None and [c.name for c in found.review_candidates] == ["Sarah"]


def test_nothing_fires_means_new():
    found = match(proposed("Zed"), [stored("Sarah"), stored("Bob")])
    assert found.merge_target is None and found.review_candidates == []


def test_review_bands():
    assert band(0.95) == "merge"
    assert band(0.90) == "merge_flagged" and band(0.80) == "merge_flagged"
    assert band(0.70) == "merge_flagged"
    assert band(0.69) == "separate"


def test_content_words_drop_function_words_and_single_letters():
    assert content_words("How is my partner doing with the new job at Acme? A b c partner") == [
        "partner", "new", "job", "acme"]


def test_a_shared_alias_of_the_proposal_only_nominates():
    found = match(proposed("Sam Kerr", aliases=["SK"]), [stored("Sarah Kim", aliases=["SK"])])
    assert found.merge_target is None and [c.name for c in found.review_candidates] == ["Sarah Kim"]
