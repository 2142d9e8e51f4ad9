"""The layout of a run folder, shared by the store, its damage checks and its lock (a leaf module)."""
CONFIG = "config.json"
STATUS = "status.json"
METRICS = "metrics.parquet"
MODEL = "model.safetensors"
CHECKPOINT = "checkpoint.safetensors"
SNAPSHOTS = "snapshots"
SNAPSHOT_WEIGHTS = "snapshots/weights"  # step_N.safetensors: the model at snapshot step N (probes.weights)
LOCK = "run.lock"  # held by the process training the run (workbench/run_lock.py)

METRIC_COLUMNS = ["step", "probe", "layer", "head", "length", "value"]
COMPLETED = "completed"
FINISHED = (COMPLETED, "diverged")  # a run that ended; the store returns it instead of training again
