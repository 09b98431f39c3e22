"""Public goods game (the linear voluntary contribution mechanism): each round every member of a
fixed group puts part of an endowment into a group account that pays every member the same
return on each token in it; optionally followed by a stage in which members may assign costly
punishment points to each other."""
