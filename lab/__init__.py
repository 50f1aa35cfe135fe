"""Tuning lab of the benchmark: sweeps, target checks, PTX reading (not installed, never
imported by the product). ``lab/README.md`` says what each script is for."""
