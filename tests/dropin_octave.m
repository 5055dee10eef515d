% tests/dropin_octave.m: Octave work for tests/test_dropin.sh. DROPIN_MODE=compute: a large
% matrix product (dgemm_) and a symmetric rank-k update (Octave computes a' * a with
% dsyrk_), saved to DROPIN_OUT; DROPIN_MODE=compare: DROPIN_OUT agrees with DROPIN_REF to
% rounding (exit status 1 otherwise).
n = 1024;
if strcmp(getenv("DROPIN_MODE"), "compute")
  rand("seed", 7); randn("seed", 7);
  a = randn(n, n); b = randn(n, n);
  c = a * b;
  s = a' * a;
  save("-binary", getenv("DROPIN_OUT"), "c", "s");
else
  r = load(getenv("DROPIN_REF")); t = load(getenv("DROPIN_OUT"));
  ec = max(abs(r.c(:) - t.c(:))) / max(abs(r.c(:)));
  es = max(abs(r.s(:) - t.s(:))) / max(abs(r.s(:)));
  printf("c: relative difference %g\ns: relative difference %g\n", ec, es);
  if !(ec < 1e-12 && es < 1e-12 && isequal(t.s, t.s'))
    exit(1);
  end
end
