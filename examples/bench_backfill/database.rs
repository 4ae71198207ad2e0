//! A fresh database for one benchmark run on a PostgreSQL or MariaDB/MySQL server, dropped
//! after it.

use sqlx::Connection;

/// A fresh database on the PostgreSQL or MariaDB/MySQL server of `admin_url`: its URL and name.
pub async fn create(admin_url: &str) -> anyhow::Result<(String, String)> {
    let name = format!(
        "payrecon_bench_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let sql = format!("CREATE DATABASE {name}");
    if admin_url.starts_with("mysql") {
        let mut conn = sqlx::MySqlConnection::connect(admin_url).await?;
        sqlx::query(&sql).execute(&mut conn).await?;
        conn.close().await?;
    } else {
        let mut conn = sqlx::PgConnection::connect(admin_url).await?;
        sqlx::query(&sql).execute(&mut conn).await?;
        conn.close().await?;
    }
    let mut url = reqwest::Url::parse(admin_url)?;
    url.set_path(&format!("/{name}"));
    Ok((url.to_string(), name))
}

pub async fn drop(admin_url: &str, name: &str) -> anyhow::Result<()> {
    if admin_url.starts_with("mysql") {
        let mut conn = sqlx::MySqlConnection::connect(admin_url).await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        return Ok(());
    }
    let mut conn = sqlx::PgConnection::connect(admin_url).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(())
}
