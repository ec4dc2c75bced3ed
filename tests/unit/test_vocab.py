"""The closed vocabularies live in pegasus.vocab only; everything else derives from them."""

from pegasus import vocab
from pegasus.extract import clean
from pegasus.models.batch import CleanEntity, CleanRelation
from pegasus.settings import Settings
from pegasus.vocab import KIND_LABELS


def test_every_user_of_a_vocabulary_takes_it_from_vocab():
    assert clean.KINDS is vocab.KINDS and clean.STABILITIES is vocab.STABILITIES
    assert clean.CARDINALITIES is vocab.CARDINALITIES and KIND_LABELS is vocab.KIND_LABELS
    assert set(Settings().decay_lambdas) == set(vocab.STABILITIES)
    assert CleanEntity.model_fields["kind"].annotation is vocab.Kind
    assert CleanRelation.model_fields["stability"].annotation is vocab.Stability
    assert CleanRelation.model_fields["cardinality"].annotation is vocab.Cardinality
    assert CleanRelation.model_fields["status"].annotation is vocab.RelationStatus


def test_members_are_the_strings_stored_in_the_graph():
    assert vocab.KIND_LABELS["PREFERENCE"] == "Preference" and len(vocab.KINDS) == 8
    assert vocab.Stability.TIME_BOUND == "time_bound" and isinstance(vocab.Stability.STABLE, str)
    assert vocab.STATUSES == ("current", "ended")
