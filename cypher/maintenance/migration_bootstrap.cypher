// Before any migration runs: each version can be recorded once only, and one lock node
// serialises concurrent `migrate` runs (design §2).
CREATE CONSTRAINT pegasus_migration_version IF NOT EXISTS
FOR (m:PegasusMigration) REQUIRE m.version IS UNIQUE;

CREATE CONSTRAINT pegasus_migration_lock IF NOT EXISTS
FOR (l:PegasusMigrationLock) REQUIRE l.name IS UNIQUE;

CREATE CONSTRAINT pegasus_maintenance_name IF NOT EXISTS
FOR (m:PegasusMaintenance) REQUIRE m.name IS UNIQUE;
