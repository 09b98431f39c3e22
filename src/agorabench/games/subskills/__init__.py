"""Sub-skills (GovSim): single questions about a shared resource, scored against a known right
answer, that tell whether a model can do the arithmetic a group needs to keep the resource alive."""
