"""Adapters between memfs and agent SDKs. Each imports its SDK lazily; nothing imports them."""
