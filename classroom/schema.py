"""The store's tables, versioned: `SCHEMA_VERSION` is written once in ``schema_version``; a database made by a later
version is refused rather than misread. Text columns hold JSON (``shown``, ``answer``, ``given``) and the link of a
question's view; keys are kept only as digests (`classroom.codes.digest`)."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    insert,
    inspect,
    select,
    text,
    update,
)

SCHEMA_VERSION = 2  # 2: a class keeps the digest of the address that started it (a cap per address)
metadata = MetaData()

schema_version = Table("schema_version", metadata, Column("version", Integer, nullable=False))

classes = Table(
    "classes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("code", String(8), nullable=False, unique=True),
    Column("teacher_digest", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("show_names", Integer, nullable=False, default=0),
    Column("owner_digest", String(64), nullable=True, index=True),  # the starting address's digest (version 2)
)

students = Table(
    "students", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("class_id", Integer, ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("digest", String(64), nullable=False, unique=True),
    Column("nickname", String(64), nullable=False, default=""),
    Column("joined_at", Float, nullable=False),
)

questions = Table(
    "questions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("class_id", Integer, ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("number", Integer, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("view", Text, nullable=False),  # the page and its link's query: what the question shows
    Column("prompt", Text, nullable=False),
    Column("shown", Text, nullable=False),  # JSON: what a student sees (tokens, options)
    Column("answer", Text, nullable=False),  # JSON: the model's answer, computed on the server
    Column("revealed", Integer, nullable=False, default=0),
    Column("asked_at", Float, nullable=False),
    UniqueConstraint("class_id", "number"),
)

answers = Table(
    "answers", metadata,
    Column("question_id", Integer, ForeignKey("questions.id", ondelete="CASCADE"), primary_key=True),
    Column("student_id", Integer, ForeignKey("students.id", ondelete="CASCADE"), primary_key=True),
    Column("given", Text, nullable=False),  # JSON: the student's latest answer
    Column("at", Float, nullable=False),
)


def create(connection) -> None:
    """Make the tables where missing, bring a version 1 database to this one (a column added), and check the
    version: ValueError for a database of a later schema."""
    metadata.create_all(connection)
    found = connection.execute(select(schema_version.c.version)).scalars().all()
    if not found:
        connection.execute(insert(schema_version).values(version=SCHEMA_VERSION))
    elif max(found) == 1:
        if "owner_digest" not in {column["name"] for column in inspect(connection).get_columns("classes")}:
            connection.execute(text("ALTER TABLE classes ADD COLUMN owner_digest VARCHAR(64)"))
        connection.execute(text("CREATE INDEX IF NOT EXISTS ix_classes_owner_digest ON classes (owner_digest)"))
        connection.execute(update(schema_version).values(version=SCHEMA_VERSION))
    elif max(found) > SCHEMA_VERSION:
        raise ValueError(f"The class database was made by a later Attention Lab (schema {max(found)}; this one "
                         f"reads {SCHEMA_VERSION}). Received: schema version {max(found)}")
