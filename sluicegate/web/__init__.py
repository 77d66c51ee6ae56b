"""HTTP plumbing shared by the webhook API, the console and the codec server, and the connection pools
of the outbound clients (``client_pools``)."""
