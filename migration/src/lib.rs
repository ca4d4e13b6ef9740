//! Migrations of the odqs store, for SQLite and PostgreSQL alike.
//!
//! They create the catalog and account tables (and the site's sessions and throttling counters). The per-version records tables are not here:
//! the import creates them, because their typed columns follow each dataset's schema
//! (see `entity::record`).

pub use sea_orm_migration::prelude::*;

mod m20261121_000001_catalog;
mod m20261121_000002_accounts;
mod m20261122_000003_sessions;
mod m20261126_000004_geo;
mod m20261127_000005_versions;
mod m20261127_000006_secrets;
mod m20261128_000007_scopes;
mod m20261130_000008_grants;
mod m20261130_000009_jobs;

/// Every migration, oldest first; `odqs migrate` and `odqs serve` apply the pending ones.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261121_000001_catalog::Migration),
            Box::new(m20261121_000002_accounts::Migration),
            Box::new(m20261122_000003_sessions::Migration),
            Box::new(m20261126_000004_geo::Migration),
            Box::new(m20261127_000005_versions::Migration),
            Box::new(m20261127_000006_secrets::Migration),
            Box::new(m20261128_000007_scopes::Migration),
            Box::new(m20261130_000008_grants::Migration),
            Box::new(m20261130_000009_jobs::Migration),
        ]
    }
}
