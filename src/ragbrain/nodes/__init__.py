"""The graph's nodes, one module each; pure nodes are functions, I/O nodes come from factories."""
