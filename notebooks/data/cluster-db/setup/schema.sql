-- The database of the test: account (read, one random row per request), hot (one row, updated
-- by every request: the shared lock), ledger (one row inserted per request, under the lock).
CREATE TABLE account (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO account SELECT g, 1000 FROM generate_series(1, 10000) AS g;
-- fillfactor 50 leaves room on the page for HOT updates of the one hot row
CREATE TABLE hot (id int PRIMARY KEY, counter bigint NOT NULL, updated_at timestamptz)
  WITH (fillfactor = 50);
INSERT INTO hot VALUES (1, 0, now());
CREATE TABLE ledger (id bigserial PRIMARY KEY, account_id int NOT NULL, amount bigint NOT NULL,
  at timestamptz NOT NULL DEFAULT now());
VACUUM ANALYZE account, hot, ledger;
