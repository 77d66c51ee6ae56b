"""The parts both processes build from the settings: ledger engine, forge client, intake service."""
