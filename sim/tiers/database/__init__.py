"""The shared database host: CPU (a `Station`) and FCFS disk spindles."""
