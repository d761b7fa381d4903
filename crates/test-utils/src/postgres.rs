//! A fresh PostgreSQL database per test, so store tests run in parallel against one server.
//!
//! The server comes from `LIFELINE_TEST_DATABASE_URL` (`.ci/run` starts PostgreSQL on 127.0.0.1 and sets
//! it). Without it, tests skip loudly, unless `LIFELINE_TEST_POSTGRES_REQUIRED=1` or `OOB_PEERS_REQUIRED=1`.

use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::Connection;
use sqlx::postgres::PgConnection;

static N: AtomicU32 = AtomicU32::new(0);

/// The admin URL of the test server, or `None` (after printing `SKIP`) when there is none.
pub fn postgres_url() -> Option<String> {
    match std::env::var("LIFELINE_TEST_DATABASE_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            let required = std::env::var("LIFELINE_TEST_POSTGRES_REQUIRED").as_deref() == Ok("1")
                || std::env::var("OOB_PEERS_REQUIRED").as_deref() == Ok("1");
            assert!(!required, "PostgreSQL required but LIFELINE_TEST_DATABASE_URL is not set");
            eprintln!("SKIP: PostgreSQL tests (set LIFELINE_TEST_DATABASE_URL=postgres://… to run them)");
            None
        }
    }
}

/// A database created for one test and dropped when this value is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    pub url: String,
}

impl TestDatabase {
    pub async fn create(admin_url: &str) -> TestDatabase {
        let name = format!("lifeline_test_{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let mut conn = PgConnection::connect(admin_url).await.expect("connect to test PostgreSQL");
        sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        let _ = conn.close().await;
        let (base, _) = admin_url.rsplit_once('/').expect("database URL has a path");
        let url = format!("{base}/{name}");
        TestDatabase { admin_url: admin_url.to_owned(), name, url }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let admin = self.admin_url.clone();
        let name = self.name.clone();
        // Dropping happens outside any runtime guarantee; use a small private one.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            rt.block_on(async {
                let mut conn = PgConnection::connect(&admin).await.ok()?;
                sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                Some(())
            })
        })
        .join();
    }
}

/// Runs `sql` on `url` and returns every row's columns as text (the query casts them: `fence::text`),
/// for tests that check the store's tables directly (which replica holds what).
pub fn pg_text_rows(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    use sqlx::Row;
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let mut conn = PgConnection::connect(&url).await.expect("connect to test PostgreSQL");
            let rows = sqlx::query(&sql).fetch_all(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            let _ = conn.close().await;
            rows.iter()
                .map(|r| {
                    (0..r.len()).map(|i| r.try_get::<Option<String>, _>(i).expect("text column")).collect()
                })
                .collect()
        })
    })
    .join()
    .expect("query thread")
}

/// [`TestDatabase::create`] from a test without a runtime.
pub fn create_database_blocking(admin_url: &str) -> TestDatabase {
    let admin = admin_url.to_owned();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(TestDatabase::create(&admin))
    })
    .join()
    .expect("create database thread")
}
