"""Beauty contest (the p-beauty contest or guessing game of Nagel 1995): a group chooses numbers
at the same time and the number closest to p times the group's average wins; played for a few
rounds, with each round's numbers, average and target shown before the next."""
