"""An LLM judge of what players wrote: taxonomies as data, the judge's prompt and answer,
the pass over a study's stored messages and the ``agora judge`` command (``docs/analysis.md``,
"An LLM judge of messages")."""
