"""`ncclgen triage`: the first failure of a dead or hung job, its cause and fix, from the job's own logs.

reader.py streams the files (bounded memory) and keeps only lines a signature's key or an error
marker names; events.py turns a kept line into an event (time, node, rank); catalogue.py holds the
signatures (ncclgen/data/triage/signatures.yaml); analyse.py picks the first failure and collapses
what follows; plancheck.py checks the cause against the plan; report.py prints text or JSON.
"""
