% tests/dropin_octave.m: Octave work for tests/test_dropin.sh. DROPIN_MODE=compute: a large
% matrix product (dgemm_), a symmetric rank-k update (Octave computes a' * a with dsyrk_) and
% the solve of a general (not symmetric) system g \ r (Octave factors g with dgetrf_ and
% solves with dgetrs_), saved to DROPIN_OUT; DROPIN_MODE=compare: DROPIN_OUT agrees with
% DROPIN_REF to rounding (exit status 1 otherwise; the solve's differences scale with the
% random g's condition number, about 1e3 to 1e4).
n = 1024;
if strcmp(getenv("DROPIN_MODE"), "compute")
  rand("seed", 7); randn("seed", 7);
  a = randn(n, n); b = randn(n, n);
  c = a * b;
  s = a' * a;
  g = randn(n, n); r = randn(n, 1);
  x = g \ r;
  save("-binary", getenv("DROPIN_OUT"), "c", "s", "x");
else
  r = load(getenv("DROPIN_REF")); t = load(getenv("DROPIN_OUT"));
  ec = max(abs(r.c(:) - t.c(:))) / max(abs(r.c(:)));
  es = max(abs(r.s(:) - t.s(:))) / max(abs(r.s(:)));
  ex = max(abs(r.x(:) - t.x(:))) / max(abs(r.x(:)));
  printf("c: relative difference %g\ns: relative difference %g\n", ec, es);
  printf("x: relative difference %g\n", ex);
  if !(ec < 1e-12 && es < 1e-12 && ex < 1e-10 && isequal(t.s, t.s'))
    exit(1);
  end
end
