"""Model providers: each turns (system, messages, tools) into one assistant reply."""
