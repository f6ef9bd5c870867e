//! `docstore`: a document store that keeps referential integrity in the
//! application.
//!
//! Source: the Ed-Fi Meadowlark PostgreSQL backend and its two performance
//! reports, whose teams compared `FOR SHARE` / `FOR NO KEY UPDATE NOWAIT`
//! locking under READ COMMITTED with SERIALIZABLE plus retry on 40001.
//!
//! Tables `documents`, `aliases` and `"references"` as the backend has
//! them, with its five secondary indexes (each optional: `indexes=`), and
//! no foreign keys (the `fk` strategy adds real ones). `parents` hot parent
//! documents (descriptors, schools) and `children` children, each child
//! referencing 1 .. `max-refs` distinct parents; every document has its self
//! alias.
//!
//! Transactions: *upsert* a child or a parent (look its alias up; validate
//! that every referenced alias exists; insert or update the document;
//! insert its self alias when new; replace its references), *delete* a child
//! or a parent (look the alias up; refuse if any reference points at it;
//! else delete its aliases, references and document). A refused or
//! not-found request is a user abort (the HTTP 404/409 of the original).
//!
//! Strategies: `locking` takes the original's locks (alias lookup by id
//! `FOR SHARE NOWAIT`, `FOR UPDATE NOWAIT` before a delete, reference
//! validation `FOR NO KEY UPDATE NOWAIT`,
//! which conflicts with itself, so two writers referencing the same hot
//! parent collide with SQLSTATE 55P03); `optimistic` and `none` take no
//! row locks (the original ran optimistic at SERIALIZABLE); `fk` adds foreign
//! keys and takes no locks (deleting a referenced alias then fails with
//! 23503). The anomaly the locks prevent: a delete of a
//! parent that saw no reference, concurrent with an upsert that validated
//! the parent, leaves a dangling reference. Because a later upsert of the
//! child replaces its references (healing the anomaly), the statement that
//! deletes a document's references also counts those that were dangling:
//! it reads the aliases they point at (under SERIALIZABLE, SIRead locks on
//! them), the price of counting every anomaly, not only the survivors.

use crate::wire::{Conn, Statement};
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::index::sample;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    Ended, ExplainStatement, Loader, ParamSpec, Setup, StrategySpec, TxControl, Workload,
    WorkloadClient, WorkloadError, WorkloadSpec,
};
use crate::model::InvariantResult;
use crate::model::Lifetime;
use crate::workload::AttemptError;

/// The optional secondary indexes: parameter name, table, column.
const INDEXES: [(&str, &str, &str); 5] = [
    ("alias-id", "aliases", "meadowlark_id"),
    ("alias-uuid", "aliases", "document_uuid"),
    ("alias-alias-id", "aliases", "alias_meadowlark_id"),
    (
        "ref-referenced",
        "\"references\"",
        "referenced_meadowlark_id",
    ),
    ("ref-parent", "\"references\"", "parent_meadowlark_id"),
];

/// `isobench workloads docstore`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "docstore",
    summary: "document store with application-level referential integrity (Meadowlark): locks vs SSI",
    source: "Ed-Fi Meadowlark PostgreSQL backend and its two performance reports",
    scale: None,
    params: &[
        ParamSpec {
            name: "parents",
            default: "10",
            help: "hot parent documents (descriptors, schools)",
        },
        ParamSpec {
            name: "children",
            default: "1000",
            help: "child documents, each referencing parents",
        },
        ParamSpec {
            name: "max-refs",
            default: "3",
            help: "a child references 1 .. max-refs distinct parents (at most parents)",
        },
        ParamSpec {
            name: "indexes",
            default: "all",
            help: "all | none | names joined by +: alias-id, alias-uuid, alias-alias-id, ref-referenced, ref-parent",
        },
    ],
    strategies: &[
        StrategySpec {
            name: "locking",
            help: "alias lookup FOR SHARE NOWAIT (FOR UPDATE NOWAIT to delete), validation FOR NO KEY UPDATE NOWAIT",
        },
        StrategySpec {
            name: "optimistic",
            help: "no row locks; rely on the isolation level (the original ran it at ser) and retry 40001",
        },
        StrategySpec {
            name: "none",
            help: "the same statements as optimistic, named for the unprotected baseline",
        },
        StrategySpec {
            name: "fk",
            help: "real foreign keys (references -> aliases -> documents), no row locks",
        },
    ],
    transactions: &[
        "upsert-child (50%): look up, validate references, insert or update, replace references",
        "delete-child (10%): look up, refuse if referenced, delete aliases, references, document",
        "upsert-parent (20%): as upsert-child, without references (re-creates deleted parents)",
        "delete-parent (20%): as delete-child (refused while any child references it)",
    ],
    invariants: &[
        "no-dangling-reference: references whose referenced alias does not exist (after the run)",
        "dangling-reference-removed: dangling references that requests replaced or deleted during the run",
        "self-alias: documents without their self alias",
        "alias-document: aliases whose document does not exist",
        "unique-id: duplicated meadowlark_id values",
    ],
    example: "--workload docstore --isolation rc,ser --strategy locking,optimistic --retry-on 40001,40P01,55P03",
};

const TYPES: [&str; 4] = [
    "upsert-child",
    "delete-child",
    "upsert-parent",
    "delete-parent",
];
/// Seed of the loaded references (data must not depend on the run).
const DATA_SEED: u64 = 0x5eed_d0c5;

/// The document-store workload.
#[derive(Debug, Clone)]
pub struct Docstore {
    parents: i64,
    children: i64,
    max_refs: i64,
    /// Which of [`INDEXES`] exist.
    indexes: [bool; 5],
    locking: bool,
    fk: bool,
}

fn parent_id(i: i64) -> String {
    format!("parent-{i:08}")
}

fn child_id(i: i64) -> String {
    format!("child-{i:09}")
}

/// A deterministic UUID per document: parents 1.., children 10^9 + i.
fn uuid(n: i64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

mod sql {
    pub(crate) const LOOKUP: &str =
        "SELECT document_uuid FROM aliases WHERE alias_meadowlark_id = $1";
    pub(crate) const LOOKUP_LOCK: &str =
        "SELECT document_uuid FROM aliases WHERE alias_meadowlark_id = $1 FOR SHARE NOWAIT";
    /// A delete locks the alias it will delete: FOR SHARE then DELETE
    /// stalled here (two deletes of one document each waiting for the
    /// other's share lock, not resolved by the deadlock detector in 10 s on
    /// PostgreSQL 15).
    pub(crate) const LOOKUP_DELETE_LOCK: &str =
        "SELECT document_uuid FROM aliases WHERE alias_meadowlark_id = $1 FOR UPDATE NOWAIT";
    pub(crate) const VALIDATE: &str =
        "SELECT alias_meadowlark_id FROM aliases WHERE alias_meadowlark_id = ANY($1)";
    pub(crate) const VALIDATE_LOCK: &str = "SELECT alias_meadowlark_id FROM aliases WHERE alias_meadowlark_id = ANY($1) FOR NO KEY UPDATE NOWAIT";
    pub(crate) const INSERT_DOC: &str = "INSERT INTO documents (meadowlark_id, document_uuid, document_identity, resource_name, last_modified_at, edfi_doc) \
         VALUES ($1::varchar, $2::text::uuid, jsonb_build_object('id', $1::varchar), $3, $4, jsonb_build_object('version', $4::bigint))";
    pub(crate) const INSERT_ALIAS: &str = "INSERT INTO aliases (meadowlark_id, document_uuid, alias_meadowlark_id) VALUES ($1, $2::text::uuid, $1)";
    pub(crate) const UPDATE_DOC: &str = "UPDATE documents SET last_modified_at = $2, edfi_doc = jsonb_build_object('version', $2::bigint) WHERE meadowlark_id = $1";
    /// Deletes a document's references and counts those that were
    /// dangling (their referenced alias is gone): an upsert replaces its
    /// references, which would otherwise heal the anomaly unseen.
    pub(crate) const DELETE_REFS: &str = "WITH d AS (DELETE FROM \"references\" WHERE parent_meadowlark_id = $1 RETURNING referenced_meadowlark_id) \
         SELECT count(*), min(referenced_meadowlark_id::text) FROM d \
          WHERE NOT EXISTS (SELECT 1 FROM aliases a WHERE a.alias_meadowlark_id = d.referenced_meadowlark_id)";
    pub(crate) const INSERT_REFS: &str = "INSERT INTO \"references\" (parent_meadowlark_id, referenced_meadowlark_id) SELECT $1, unnest($2::varchar[])";
    pub(crate) const REFERENCED: &str =
        "SELECT 1 FROM \"references\" WHERE referenced_meadowlark_id = $1 LIMIT 1";
    pub(crate) const DELETE_ALIASES: &str = "DELETE FROM aliases WHERE meadowlark_id = $1";
    pub(crate) const DELETE_DOC: &str = "DELETE FROM documents WHERE meadowlark_id = $1";
}

impl Docstore {
    /// The initial references: (child, parent) pairs.
    fn initial_refs(&self) -> Vec<(i64, i64)> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(DATA_SEED);
        let mut out = Vec::new();
        for c in 1..=self.children {
            for p in pick_parents(&mut rng, self.parents, self.max_refs) {
                out.push((c, p));
            }
        }
        out
    }
}

/// 1 ..= max_refs distinct parents, uniform.
fn pick_parents(rng: &mut Xoshiro256PlusPlus, parents: i64, max_refs: i64) -> Vec<i64> {
    let n = rng.random_range(1..=max_refs) as usize;
    let mut v: Vec<i64> = sample(rng, parents as usize, n)
        .into_iter()
        .map(|i| i as i64 + 1)
        .collect();
    v.sort_unstable();
    v
}

impl Workload for Docstore {
    type Client = DocstoreClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        let parents = setup.int("parents", 1..=10_000_000)?;
        let children = setup.int("children", 1..=100_000_000)?;
        let max_refs = setup.int("max-refs", 1..=parents.min(1000))?;
        let spec = setup.params["indexes"].trim().to_string();
        let indexes = match spec.as_str() {
            "all" => [true; 5],
            "none" => [false; 5],
            list => {
                let mut on = [false; 5];
                for name in list.split('+') {
                    let i = INDEXES.iter().position(|(n, _, _)| *n == name.trim()).ok_or_else(|| {
                        WorkloadError::Invalid(format!(
                            "--param indexes={spec}: unknown index '{name}' (use all, none, or names joined by +: {})",
                            INDEXES.map(|(n, _, _)| n).join(", ")
                        ))
                    })?;
                    on[i] = true;
                }
                on
            }
        };
        Ok(Docstore {
            parents,
            children,
            max_refs,
            indexes,
            locking: setup.strategy == "locking",
            fk: setup.strategy == "fk",
        })
    }

    fn data_key(&self) -> String {
        let idx: Vec<&str> = INDEXES
            .iter()
            .zip(self.indexes)
            .filter(|(_, on)| *on)
            .map(|((n, _, _), _)| *n)
            .collect();
        format!(
            "parents={} children={} max-refs={} indexes={}{}",
            self.parents,
            self.children,
            self.max_refs,
            if idx.is_empty() {
                "none".into()
            } else {
                idx.join("+")
            },
            if self.fk { " foreign-keys" } else { "" }
        )
    }

    fn tx_types(&self) -> Vec<&'static str> {
        TYPES.to_vec()
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        db.batch_execute(
            "CREATE TABLE documents (id bigserial PRIMARY KEY, meadowlark_id varchar(56) NOT NULL UNIQUE,
                 document_uuid uuid NOT NULL UNIQUE, document_identity jsonb NOT NULL, resource_name varchar NOT NULL,
                 last_modified_at bigint NOT NULL, edfi_doc jsonb NOT NULL);
             CREATE TABLE aliases (id bigserial PRIMARY KEY, meadowlark_id varchar NOT NULL, document_uuid uuid NOT NULL,
                 alias_meadowlark_id varchar NOT NULL);
             CREATE TABLE \"references\" (id bigserial PRIMARY KEY, parent_meadowlark_id varchar NOT NULL,
                 referenced_meadowlark_id varchar NOT NULL);",
        )
        .await
        .map_err(WorkloadError::db("create docstore tables"))?;
        let mut rows = db
            .execute(
                "INSERT INTO documents (meadowlark_id, document_uuid, document_identity, resource_name, last_modified_at, edfi_doc)
                 SELECT 'parent-' || lpad(i::text, 8, '0'), ('00000000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid,
                        jsonb_build_object('id', 'parent-' || lpad(i::text, 8, '0')), 'School', 0, jsonb_build_object('version', 0)
                   FROM generate_series(1, $1::bigint) i
                 UNION ALL
                 SELECT 'child-' || lpad(i::text, 9, '0'), ('00000000-0000-4000-8000-' || lpad(to_hex(1000000000 + i), 12, '0'))::uuid,
                        jsonb_build_object('id', 'child-' || lpad(i::text, 9, '0')), 'Student', 0, jsonb_build_object('version', 0)
                   FROM generate_series(1, $2::bigint) i",
                &[&self.parents, &self.children],
            )
            .await
            .map_err(WorkloadError::db("load documents"))?;
        rows += db
            .execute(
                "INSERT INTO aliases (meadowlark_id, document_uuid, alias_meadowlark_id)
                 SELECT meadowlark_id, document_uuid, meadowlark_id FROM documents ORDER BY id",
                &[],
            )
            .await
            .map_err(WorkloadError::db("load aliases"))?;
        let (kids, parents): (Vec<String>, Vec<String>) = self
            .initial_refs()
            .into_iter()
            .map(|(c, p)| (child_id(c), parent_id(p)))
            .unzip();
        rows += db
            .execute(
                "INSERT INTO \"references\" (parent_meadowlark_id, referenced_meadowlark_id)
                 SELECT * FROM unnest($1::varchar[], $2::varchar[])",
                &[&kids, &parents],
            )
            .await
            .map_err(WorkloadError::db("load references"))?;
        for ((name, table, column), on) in INDEXES.iter().zip(self.indexes) {
            if on {
                let sql = format!(
                    "CREATE INDEX {} ON {table} ({column})",
                    name.replace('-', "_")
                );
                db.batch_execute(&sql)
                    .await
                    .map_err(WorkloadError::db(&sql))?;
            }
        }
        if self.fk {
            db.batch_execute(
                "ALTER TABLE aliases ADD UNIQUE (alias_meadowlark_id);
                 ALTER TABLE aliases ADD FOREIGN KEY (meadowlark_id) REFERENCES documents (meadowlark_id);
                 ALTER TABLE \"references\" ADD FOREIGN KEY (referenced_meadowlark_id) REFERENCES aliases (alias_meadowlark_id);
                 ALTER TABLE \"references\" ADD FOREIGN KEY (parent_meadowlark_id) REFERENCES documents (meadowlark_id);",
            )
            .await
            .map_err(WorkloadError::db("add docstore foreign keys"))?;
        }
        Ok(rows)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        let p = format!("'{}'", parent_id(1));
        vec![
            ExplainStatement {
                label: "alias lookup".into(),
                sql: if self.locking {
                    sql::LOOKUP_LOCK
                } else {
                    sql::LOOKUP
                }
                .replace("$1", &p),
            },
            ExplainStatement {
                label: "validate references".into(),
                sql: if self.locking {
                    sql::VALIDATE_LOCK
                } else {
                    sql::VALIDATE
                }
                .replace("$1", &format!("ARRAY[{p}]")),
            },
            ExplainStatement {
                label: "referenced?".into(),
                sql: sql::REFERENCED.replace("$1", &p),
            },
            ExplainStatement {
                label: "delete references".into(),
                sql: sql::DELETE_REFS.replace("$1", &format!("'{}'", child_id(1))),
            },
        ]
    }

    fn client(&self, _client_id: u32, seed: u64) -> DocstoreClient {
        DocstoreClient {
            w: self.clone(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            stmts: None,
            version: 0,
            removed: Dangling::default(),
        }
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        removed: Dangling,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let q = |sql: &'static str| async move {
            let row = db
                .query_one(sql, &[])
                .await
                .map_err(WorkloadError::db("docstore invariant query"))?;
            Ok::<(i64, Option<String>), WorkloadError>((row.get(0), row.get(1)))
        };
        let (dangling, d_ex) = q(
            "SELECT count(*), min(r.parent_meadowlark_id || ' -> ' || r.referenced_meadowlark_id)
               FROM \"references\" r
              WHERE NOT EXISTS (SELECT 1 FROM aliases a WHERE a.alias_meadowlark_id = r.referenced_meadowlark_id)",
        )
        .await?;
        let (no_self, s_ex) = q(
            "SELECT count(*), min(d.meadowlark_id) FROM documents d
              WHERE NOT EXISTS (SELECT 1 FROM aliases a WHERE a.meadowlark_id = d.meadowlark_id
                                                         AND a.alias_meadowlark_id = d.meadowlark_id)",
        )
        .await?;
        let (orphan, o_ex) = q(
            "SELECT count(*), min(a.meadowlark_id) FROM aliases a
              WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.meadowlark_id = a.meadowlark_id)",
        )
        .await?;
        let (dups, u_ex) = q("SELECT count(*), min(meadowlark_id) FROM
               (SELECT meadowlark_id FROM documents GROUP BY meadowlark_id HAVING count(*) > 1) x")
        .await?;
        let detail = |n: i64, ex: Option<String>, what: &str| match ex {
            Some(e) if n > 0 => format!("{n} {what}, e.g. {e}"),
            _ => format!("no {what}"),
        };
        Ok(vec![
            InvariantResult::count(
                "no-dangling-reference",
                dangling as u64,
                detail(
                    dangling,
                    d_ex,
                    "dangling references (child -> missing parent)",
                ),
            ),
            InvariantResult::count(
                "dangling-reference-removed",
                removed.count,
                match &removed.example {
                    Some(e) if removed.count > 0 => format!(
                        "{} dangling references removed by later requests during the run, e.g. {e}",
                        removed.count
                    ),
                    _ => "no request removed a dangling reference".into(),
                },
            ),
            InvariantResult::count(
                "self-alias",
                no_self as u64,
                detail(no_self, s_ex, "documents without a self alias"),
            ),
            InvariantResult::count(
                "alias-document",
                orphan as u64,
                detail(orphan, o_ex, "aliases without a document"),
            ),
            InvariantResult::count(
                "unique-id",
                dups as u64,
                detail(dups, u_ex, "duplicated meadowlark_id values"),
            ),
        ])
    }
}

/// Prepared statements of one connection.
#[derive(Debug)]
struct Stmts {
    lookup: Statement,
    lookup_delete: Statement,
    validate: Statement,
    insert_doc: Statement,
    insert_alias: Statement,
    update_doc: Statement,
    delete_refs: Statement,
    insert_refs: Statement,
    referenced: Statement,
    delete_aliases: Statement,
    delete_doc: Statement,
}

/// One client of the document store.
#[derive(Debug)]
pub struct DocstoreClient {
    w: Docstore,
    rng: Xoshiro256PlusPlus,
    stmts: Option<Stmts>,
    /// Written into documents' last_modified_at and edfi_doc.
    version: i64,
    removed: Dangling,
}

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocstoreInput {
    /// Index into the transaction types.
    pub ty: usize,
    /// The document: its meadowlark_id and uuid.
    pub id: String,
    pub uuid: String,
    /// Parents referenced (upsert-child only).
    pub refs: Vec<String>,
}

impl DocstoreClient {
    /// Deletes `id`'s references; `Some((n, example))` when `n > 0` of them
    /// were dangling.
    async fn delete_refs(
        conn: &mut Conn,
        stmt: &Statement,
        id: &String,
    ) -> Result<Option<(u64, String)>, AttemptError> {
        let row = conn
            .query_one(stmt, &[id])
            .await
            .map_err(AttemptError::body)?;
        let n: i64 = row.get(0);
        Ok((n > 0).then(|| (n as u64, row.get::<Option<String>>(1).unwrap_or_default())))
    }
}

/// Dangling references that committed requests removed (replaced or
/// deleted) during the run.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Dangling {
    pub count: u64,
    /// `child -> missing parent`.
    pub example: Option<String>,
}

impl super::Ledger for Dangling {
    fn merge(&mut self, o: Self) {
        self.count += o.count;
        self.example = self.example.take().or(o.example);
    }
}

impl WorkloadClient for DocstoreClient {
    type Input = DocstoreInput;
    type Ledger = Dangling;

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        let locking = self.w.locking;
        self.stmts = Some(Stmts {
            lookup: conn
                .prepare(if locking {
                    sql::LOOKUP_LOCK
                } else {
                    sql::LOOKUP
                })
                .await?,
            lookup_delete: conn
                .prepare(if locking {
                    sql::LOOKUP_DELETE_LOCK
                } else {
                    sql::LOOKUP
                })
                .await?,
            validate: conn
                .prepare(if locking {
                    sql::VALIDATE_LOCK
                } else {
                    sql::VALIDATE
                })
                .await?,
            insert_doc: conn.prepare(sql::INSERT_DOC).await?,
            insert_alias: conn.prepare(sql::INSERT_ALIAS).await?,
            update_doc: conn.prepare(sql::UPDATE_DOC).await?,
            delete_refs: conn.prepare(sql::DELETE_REFS).await?,
            insert_refs: conn.prepare(sql::INSERT_REFS).await?,
            referenced: conn.prepare(sql::REFERENCED).await?,
            delete_aliases: conn.prepare(sql::DELETE_ALIASES).await?,
            delete_doc: conn.prepare(sql::DELETE_DOC).await?,
        });
        Ok(())
    }

    fn next_input(&mut self) -> DocstoreInput {
        let w = &self.w;
        let roll = self.rng.random_range(0..100);
        let ty = match roll {
            0..50 => 0,
            50..60 => 1,
            60..80 => 2,
            _ => 3,
        };
        let child = ty < 2;
        let (id, uuid) = if child {
            let c = self.rng.random_range(1..=w.children);
            (child_id(c), self::uuid(1_000_000_000 + c))
        } else {
            let p = self.rng.random_range(1..=w.parents);
            (parent_id(p), self::uuid(p))
        };
        let refs = if ty == 0 {
            pick_parents(&mut self.rng, w.parents, w.max_refs)
                .into_iter()
                .map(parent_id)
                .collect()
        } else {
            Vec::new()
        };
        DocstoreInput { ty, id, uuid, refs }
    }

    fn tx_type(&self, input: &DocstoreInput) -> usize {
        input.ty
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        i: &DocstoreInput,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        let body = |e| AttemptError::body(e);
        let mut removed = None;
        tx.begin(conn).await?;
        let upsert = i.ty == 0 || i.ty == 2;
        let lookup = if upsert { &s.lookup } else { &s.lookup_delete };
        let exists = !conn.query(lookup, &[&i.id]).await.map_err(body)?.is_empty();
        if upsert {
            // Upsert.
            if !i.refs.is_empty() {
                let found = conn.query(&s.validate, &[&i.refs]).await.map_err(body)?;
                if found.len() < i.refs.len() {
                    // A referenced parent does not exist: 409.
                    return tx.user_abort(conn).await;
                }
            }
            self.version += 1;
            // Row locks in one order everywhere: alias, references,
            // document (deletes too), else concurrent requests deadlock.
            if exists {
                if i.ty == 0 {
                    removed = Self::delete_refs(conn, &s.delete_refs, &i.id).await?;
                    conn.execute(&s.insert_refs, &[&i.id, &i.refs])
                        .await
                        .map_err(body)?;
                }
                conn.execute(&s.update_doc, &[&i.id, &self.version])
                    .await
                    .map_err(body)?;
            } else {
                let resource = if i.ty == 0 { "Student" } else { "School" };
                conn.execute(&s.insert_doc, &[&i.id, &i.uuid, &resource, &self.version])
                    .await
                    .map_err(body)?;
                conn.execute(&s.insert_alias, &[&i.id, &i.uuid])
                    .await
                    .map_err(body)?;
                if i.ty == 0 {
                    conn.execute(&s.insert_refs, &[&i.id, &i.refs])
                        .await
                        .map_err(body)?;
                }
            }
        } else {
            // Delete.
            if !exists {
                return tx.user_abort(conn).await; // 404
            }
            if !conn
                .query(&s.referenced, &[&i.id])
                .await
                .map_err(body)?
                .is_empty()
            {
                return tx.user_abort(conn).await; // 409: still referenced
            }
            conn.execute(&s.delete_aliases, &[&i.id])
                .await
                .map_err(body)?;
            removed = Self::delete_refs(conn, &s.delete_refs, &i.id).await?;
            conn.execute(&s.delete_doc, &[&i.id]).await.map_err(body)?;
        }
        let outcome = tx.commit(conn).await?;
        if let Some((n, example)) = removed {
            self.removed.count += n;
            if self.removed.example.is_none() {
                self.removed.example = Some(format!("{} -> {example}", i.id));
            }
        }
        Ok(outcome)
    }

    fn into_ledger(self) -> Dangling {
        self.removed
    }
}
