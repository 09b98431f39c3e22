"""GLEE game families (Shapira et al.): bargaining, negotiation and persuasion between Alice and
Bob, with the parameter space of the paper's §2 and Table 2."""
