"""A schema migration is never edited once released: every database that applied it keeps its
checksum, and `migrate` refuses to start when the file on disk differs (a server would not come
up). A change to the schema is a new numbered file. This pins each released file's checksum, so
an edit (a comment reworded by a rename across the tree, say) fails here, not on a person's
server. A new migration adds its line."""

from pegasus import cypher

RELEASED = {
    1: "3285b94c2b826a2dea3ebe5a4a40a597d4ad1075b83e63b3f3be59dc65277ff1",  # V0001
    2: "3be7a738fdb33c61b8e795ee3a3502c9128b61a66b38badb2f7f545d170bc6c5",  # V0002
    3: "6e0d52cfdb887c290f1a2f29a71056d15cd66147f7676680a78afe60a9244d36",  # V0003
    4: "868c3f9201416b3842a1c3bd98af5039590380d5203fdbdceeb2d77364d07c6f",  # V0004
    5: "93424ad1e8dda8c696cdc9b62804117928e89323df9e2e03ba340eb40b771ed8",  # V0005
    6: "fb0fcdaa6980c67767502f109bfa3cd1161aeb0f1aec62fd1812ac63817013c1",  # V0006
    7: "5b136b8ddb435bc32c4e61ea0dc8faff2cf43d1c078e9141cebc86ba3fd7b2ec",  # V0007
    8: "57f87aa54604190dfbb7b517769293a6e752e683039762b50c261a19de8f6267",  # V0008
    9: "5df142496a473c67d444474c0028b5e15077d1b7f0836fa014c880f2c3721ba6",  # V0009
    10: "dc1c43cd33c5c6aa64c4ffde864362680d7cb1c1fdeaeff95d277e1f285d6ccc",  # V0010
    11: "343d4983c66d7adcecaab492d6b8bf826434096d22f8c3d0e9e11671fdf88e3d",  # V0011
    12: "73974e721908f0640c56d01802455a505e196fcafc4e76c70123c90af3229a73",  # V0012
    13: "6c45db8971ed19b0659e22529ddabe43c1306c26571a85e610fe1579c1f2c9ac",  # V0013
    14: "2f96c5099854b7921e4ca84b227cce89c3b4007246875c30ea7858967ba5baca",  # V0014
}


def test_no_released_migration_changed():
    on_disk = {m.version: m.checksum for m in cypher.migrations()}
    assert {v: on_disk.get(v) for v in RELEASED} == RELEASED


def test_every_migration_on_disk_is_pinned():
    assert sorted(m.version for m in cypher.migrations()) == sorted(RELEASED)
