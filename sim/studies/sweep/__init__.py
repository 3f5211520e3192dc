"""Parameter sweeps: a base model plus factors, run in parallel, resumable, stored as Parquet."""
