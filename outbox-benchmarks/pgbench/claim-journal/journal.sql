-- A batch's row of the claim journal, as HeldClaims writes it (committed at once), and its deletion, which
-- the batch's last outcome commits with the batch.
\set i random(1, 150)
\set k random(1, 2000000000)
INSERT INTO bench_cj_claims (claim_key, claim_owner, event_ids) SELECT :k, 'mic-outbox-1-0123456789abcdef', ids FROM bench_cj_ids WHERE n = :i ON CONFLICT (claim_key) DO NOTHING;
DELETE FROM bench_cj_claims WHERE claim_key = :k;
