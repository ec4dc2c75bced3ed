MERGE (m:PegasusMigration {version: $version})
SET m.description = $description, m.checksum = $checksum, m.applied_at = datetime($applied_at)
