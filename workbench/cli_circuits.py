"""`workbench patch`, `workbench heads` and `workbench lens`: the circuits tools on a stored run, as
tables in the terminal, JSON (--json) or a figure (--out FILE.pdf|svg|png)."""
from __future__ import annotations

RUN_HELP = "a run id, or a unique prefix of one (`workbench runs` lists them)"
STEP_HELP = "the model at this snapshot step (runs trained with probes.weights=true); default: the final model"


def add_circuits_commands(sub) -> None:
    p = sub.add_parser("patch", help="activation patching: how much of the answer each (layer, position, component) carries")
    _common(p)
    p.add_argument("--components", default="resid_pre,mixer_out,mlp_out,units",
                   help="comma-separated: resid_pre, mixer_out, mlp_out, resid_post, units (heads or channel groups)")
    p.add_argument("--every-channel", action="store_true",
                   help="patch every channel of Mamba, S4D, H3, LSTM and GRU (default: 8 channel groups per layer)")
    p = sub.add_parser("heads", help="previous-token, duplicate-token and induction scores of every head or channel")
    _common(p)
    p.add_argument("--over-training", action="store_true",
                   help="the scores the `heads` probe recorded at every probe step (probes.extra=heads), not one model's")
    p.add_argument("--top", type=int, default=5, help="text output: the best units per detector (default 5)")
    p = sub.add_parser("lens", help="logit lens and direct logit attribution of the answer")
    _common(p)


def _common(p) -> None:
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--step", type=int, default=None, help=STEP_HELP)
    p.add_argument("--n", type=int, default=32, help="clean/corrupted pairs or task samples (default 32)")
    p.add_argument("--seed", type=int, default=0, help="which pairs or samples (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON records instead of text")
    p.add_argument("--out", default=None, help="also write the figure: FILE.pdf, .svg or .png")


def cmd_patch(args, print_json) -> int:
    from .circuits.views import run_patching
    from .errors import check

    check(args.n >= 1, "--n", args.n, "expected at least 1 pair")
    view = run_patching(_run(args.run), args.step, args.n, args.seed, _components(args.components),
                        None if args.every_channel else 8)
    if args.out:
        from .figures.circuits import patching_heatmap

        _export(patching_heatmap(view.sweep, view.sweep.component.iloc[0], view.clean_tokens), args.out)
    if args.json:
        print_json({"clean": view.clean_tokens, "corrupted": view.corrupted_tokens, "answer": view.answer,
                    "wrong": view.wrong, "rows": view.sweep.to_dict(orient="records"),
                    "unit_groups": {str(k): v for k, v in view.sweep.attrs.get("unit_groups", {}).items()}})
        return 0
    print(f"pair 0: clean {' '.join(view.clean_tokens)} -> {view.answer}; corrupted {' '.join(view.corrupted_tokens)}"
          f" -> {view.wrong}")
    print("fraction of the clean logit difference recovered by patching the clean activation in (mean over pairs)")
    sweep = view.sweep
    for layer, spans in sweep.attrs.get("unit_groups", {}).items():
        if len(spans) and spans[0][1] - spans[0][0] > 1:  # channels patched in groups: say which
            print(f"layer {layer} units are channel groups: " + ", ".join(f"{u}=[{a}, {b})" for u, (a, b) in enumerate(spans)))
    for component, part in sweep.groupby("component", sort=False):
        grid = part.pivot_table(index=["layer", "unit"], columns="position", values="effect").round(2)
        print(f"\n{component}\n" + grid.to_string(na_rep="·"))
    return 0


def cmd_heads(args, print_json) -> int:
    from .circuits.views import heads_over_training, run_heads

    run = _run(args.run)
    if args.over_training:
        frame = heads_over_training(run)
        if frame.empty:
            from .errors import ConfigError

            raise ConfigError("run", run.run_id, "recorded no detector scores; train it with probes.extra=heads")
        if args.out:
            from .figures.circuits import detector_scores_over_training

            _export(detector_scores_over_training(frame), args.out)
        if args.json:
            print_json(frame.to_dict(orient="records"))
        else:
            best = frame.groupby(["step", "probe"]).value.max().unstack().round(3)
            print("best score of any head or channel at each probe step\n" + best.to_string())
        return 0
    scores = run_heads(run, args.step, max(args.n, 1), args.seed)
    if args.out:
        from .figures.circuits import unit_scores_heatmap

        _export(unit_scores_heatmap(scores), args.out)
    if args.json:
        print_json(scores.to_dict(orient="records"))
        return 0
    for detector, part in scores.groupby("detector", sort=False):
        top = part.nlargest(args.top, "score")
        print(f"{detector:16s} " + "  ".join(f"L{l} u{u}: {s:.2f}" for l, u, s in zip(top.layer, top.unit, top.score)))
    return 0


def cmd_lens(args, print_json) -> int:
    from .circuits.views import run_lens

    lens, attribution = run_lens(_run(args.run), args.step, max(args.n, 1), args.seed)
    if args.out:
        from .figures.circuits import logit_lens_figure

        _export(logit_lens_figure(lens), args.out)
    if args.json:
        print_json({"logit_lens": lens.to_dict(orient="records"),
                    "direct_logit_attribution": attribution.to_dict(orient="records")})
        return 0
    print("logit lens: the answer read from the residual stream after each stage\n" + lens.round(3).to_string(index=False))
    print("\ndirect logit attribution (answer minus wrong)\n" + attribution.round(3).to_string(index=False))
    return 0


def _run(run_id: str):
    from .store import open_run

    return open_run(run_id)


def _components(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _export(fig, out: str) -> None:
    import sys

    from .figures.export import export, export_path

    print(export(fig, export_path(out, "circuits.pdf")), file=sys.stderr)
