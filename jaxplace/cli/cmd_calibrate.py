"""`jaxplace calibrate -o profile.json`: measure this machine and fit a device profile
(`jaxplace.calibrate`), for `--device profile.json` and `device="profile.json"`."""

from __future__ import annotations

from jaxplace.errors import JaxplaceError

HELP = "measure this machine and fit a device profile (needs the torch extra)"
DESCRIPTION = (
    "Run microbenchmarks on one thread (matmuls for the matrix peak, exp for the vector "
    "peak, a skinny matmul over a large weight for the memory bandwidth, tiny ops for the "
    "launch overheads, a gloo ping-pong between two processes for the link), time the "
    "forward and backward of the pipeline stages of the built-in models (a GPT-like "
    "transformer, a CNN and an MLP, each planned at several k), fit the per-op overheads "
    "to those stages, and write the profile JSON. --loo also reports, for every model, "
    "the error of its stages' predicted forward + backward times when the fit never saw "
    "it (leave one model out), before and after calibration.")


def add_arguments(p) -> None:
    p.add_argument("-o", "--output", metavar="PATH", required=True,
                   help="profile JSON to write (then --device PATH)")
    p.add_argument("--base", default="cpu",
                   help="profile the fit starts from and keeps dtype ratios, memory of "
                   "(default cpu)")
    p.add_argument("--models", default="gpt,cnn,mlp",
                   help="built-in models to measure (comma-separated; default all: "
                   "gpt,cnn,mlp)")
    p.add_argument("--ks", default="2,3,4", help="stage counts each model is planned at")
    p.add_argument("--repeats", type=int, default=7, help="timed rounds per stage")
    p.add_argument("--no-micro", action="store_true",
                   help="skip the microbenchmarks: fit every rate to the stages")
    p.add_argument("--no-link", action="store_true", help="skip the gloo link benchmark")
    p.add_argument("--loo", action="store_true",
                   help="also report leave-one-model-out errors")
    p.add_argument("--name", default="measured", help="the profile's name")
    p.add_argument("--loop", metavar="MODEL",
                   help="instead of fitting a profile: the closed loop on a built-in model "
                   "(gpt, cnn, mlp): plan with --base, run (gloo processes), time its "
                   "stages, refit the overheads, replan, run; per stage predicted vs "
                   "measured before and after, and the replanned split's regret; -o gets "
                   "the refitted profile")
    p.add_argument("-k", type=int, default=2, help="--loop: pipeline stages (processes)")
    p.add_argument("--microbatches", type=int, default=4, help="--loop: per step")


def _ints(text: str, field: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise JaxplaceError(f"not a comma-separated list of integers: {text!r}",
                            field=field) from None
    if not out or min(out) < 1:
        raise JaxplaceError("must list stage counts >= 1", field=field)
    return out


def _loop(args, known, base, out) -> int:
    from jaxplace.calibrate import closed_loop
    from jaxplace.calibrate.micro import run_microbenchmarks
    from jaxplace.importers.devices import save_profile

    if args.loop not in known:
        raise JaxplaceError(f"unknown model {args.loop!r}; known: {', '.join(known)}",
                            field="--loop")
    if args.k < 2 or args.microbatches < 1:
        raise JaxplaceError("--loop needs -k >= 2 and --microbatches >= 1", field="-k")
    micro = None if args.no_micro else run_microbenchmarks(link=not args.no_link)
    module, margs = known[args.loop]()
    report = closed_loop(module, margs, args.k, profile=base, micro=micro,
                         n_microbatches=args.microbatches)
    print(report.table())
    save_profile(report.second.profile, out)
    print(f"wrote {out}")
    return 0


def run(args) -> int:
    from pathlib import Path

    from jaxplace.importers.devices import get_device

    ks = _ints(args.ks, "--ks")
    if args.repeats < 1:
        raise JaxplaceError("must be at least 1", field="--repeats")
    base = get_device(args.base)
    out = Path(args.output)
    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise JaxplaceError("folder does not exist", source=str(out.parent),
                            field="--output")
    from jaxplace.calibrate import builtin_models, fit_measured, leave_one_out, measure_models
    from jaxplace.calibrate.micro import run_microbenchmarks
    from jaxplace.importers.devices import save_profile

    known = builtin_models()
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in known]
    if unknown or not names:
        raise JaxplaceError(f"unknown models {unknown}; known: {', '.join(known)}",
                            field="--models")
    if args.loo and len(names) < 2:
        raise JaxplaceError("--loo needs at least 2 models", field="--models")
    if args.loop is not None:
        return _loop(args, known, base, out)
    micro = None if args.no_micro else run_microbenchmarks(link=not args.no_link)
    if micro is not None:
        print(f"microbenchmarks: matrix {micro.matrix_flops / 1e9:.4g} GFLOP/s, vector "
              f"{micro.vector_flops / 1e9:.4g} GFLOP/s, memory {micro.mem_bw / 1e9:.4g} GB/s, "
              f"launch {micro.launch_s * 1e6:.3g} us (backward {micro.backward_launch_s * 1e6:.3g}"
              " us)" + ("" if micro.link_bw is None else
                        f", link {micro.link_bw / 1e9:.4g} GB/s + "
                        f"{micro.link_latency_s * 1e6:.3g} us"))
    measured = measure_models({n: known[n] for n in names}, ks=ks, device=base,
                              repeats=args.repeats)
    profile = fit_measured(measured, base, micro=micro, name=args.name)
    fitted = profile.calibration["fitted"]
    print(f"fitted on {len(names)} models, {profile.calibration['stages']} stages: launch "
          f"{fitted['launch_s'] * 1e6:.4g} us, backward launch "
          f"{fitted['backward_launch_s'] * 1e6:.4g} us, rms log error "
          f"{profile.calibration['rms_log_error']:.3f}")
    if args.loo:
        print(f"{'held out':<9} {'stages':>6} {'error before':>13} {'micro only':>11} "
              f"{'after':>7}   (median |predicted - measured| / measured, fwd + bwd)")
        for h in leave_one_out(measured, base, micro=micro):
            mic = "n/a" if h.error_micro is None else f"{h.error_micro:.1%}"
            print(f"{h.model:<9} {len(h.measured):>6} {h.error_before:>13.1%} {mic:>11} "
                  f"{h.error_after:>7.1%}")
    save_profile(profile, out)
    print(f"wrote {out}")
    return 0
