from pegasus.merge.rules import StoredEntity, band, match, resembles, similarity
from pegasus.models.batch import CleanEntity
from pegasus.settings import Settings
from pegasus.text import content_words, nickname_match

S = Settings()


def match_(entity, pool):
    return match(entity, pool, S.fuzzy_similarity)


def band_(confidence):
    return band(confidence, S.review_merge_silent, S.review_merge_flagged)


def resembles_(a, b):
    return resembles(a, b, S.fuzzy_similarity)


def proposed(name, kind="PERSON", aliases=(), hint=None):
    return CleanEntity(name=name, kind=kind, aliases=list(aliases), properties={},
                       confidence=0.9, same_as_hint=hint)


def stored(name, kind="PERSON", aliases=(), id=None):
    return StoredEntity(id=id or name, name=name, kind=kind, aliases=list(aliases))


def test_exact_match_is_case_and_space_folded():
    found = match_(proposed("  sarah   KIM"), [stored("Sarah Kim")])
    assert found.rule == "exact" and found.merge_target.name == "Sarah Kim"


def test_same_name_different_kind_never_merges():
    found = match_(proposed("Sam", "PERSON"), [stored("Sam", "ORG")])
    assert found.merge_target is None and found.review_candidates == []


def test_alias_of_one_node_merges_and_of_two_goes_to_review():
    one = match_(proposed("Sarah K"), [stored("Sarah Kim", aliases=["Sarah K"]), stored("Bob")])
    assert one.rule == "alias" and one.merge_target.name == "Sarah Kim"
    two = match_(proposed("SK"), [stored("Sarah Kim", aliases=["SK"]),
                                 stored("Sam Kerr", aliases=["sk"])])
    assert two.merge_target is None
    assert {c.name for c in two.review_candidates} == {"Sarah Kim", "Sam Kerr"}


def test_nickname_group_merges_bill_into_william_smith():
    found = match_(proposed("Bill"), [stored("William Smith"), stored("Robert Jones")])
    assert found.rule == "nickname" and found.merge_target.name == "William Smith"


def test_nickname_with_two_matches_goes_to_review():
    found = match_(proposed("Bill"), [stored("William Smith"), stored("Will Turner")])
    assert found.merge_target is None and len(found.review_candidates) == 2


def test_nickname_needs_compatible_surnames():
    assert nickname_match("Bill Smith", "William Smith")
    assert not nickname_match("Bill Jones", "William Smith")
    assert not nickname_match("Bill", "Bill")  # equal names are rule 1


def test_sarah_kim_versus_sarah_only_nominates():
    found = match_(proposed("Sarah Kim"), [stored("Sarah")])
    assert found.merge_target is None and [c.name for c in found.review_candidates] == ["Sarah"]


def test_weak_resemblance_rules():
    assert similarity("Jonathon", "Jonathan") > 0.8 and resembles_("Jonathon", "Jonathan")
    assert resembles_("Acme Corp", "Acme")  # containment
    assert resembles_("New York Times", "New York Post")  # two of three words each
    assert not resembles_("Sarah", "Bob")


def test_hint_only_nominates():
    found = match_(proposed("The boss", hint="Sarah"), [stored("Sarah")])
    assert found.merge_target is None and [c.name for c in found.review_candidates] == ["Sarah"]


def test_nothing_fires_means_new():
    found = match_(proposed("Zed"), [stored("Sarah"), stored("Bob")])
    assert found.merge_target is None and found.review_candidates == []


def test_review_bands():
    assert band_(0.95) == "merge"
    assert band_(0.90) == "merge_flagged" and band_(0.80) == "merge_flagged"
    assert band_(0.70) == "merge_flagged"
    assert band_(0.69) == "separate"


def test_content_words_drop_function_words_and_single_letters():
    assert content_words("How is my partner doing with the new job at Acme? A b c partner") == [
        "partner", "new", "job", "acme"]


def test_a_shared_alias_of_the_proposal_only_nominates():
    found = match_(proposed("Sam Kerr", aliases=["SK"]), [stored("Sarah Kim", aliases=["SK"])])
    assert found.merge_target is None and [c.name for c in found.review_candidates] == ["Sarah Kim"]
