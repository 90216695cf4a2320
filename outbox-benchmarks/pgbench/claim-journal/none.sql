-- Two statements that touch no table: the round trips and the statements' own cost, the floor of the others.
\set i random(1, 150)
\set k random(1, 2000000000)
SELECT :k, :i;
SELECT :k;
