"""optimize.py -- the fits' minimiser (fit.py, fit_onehost.py): Nelder-Mead, numpy only
(no scipy on the CI machines' Debian set)."""
import numpy as np


def nelder_mead(f, x0, step=0.5, iters=400):
    n = len(x0)
    simplex = [np.array(x0, float)] + [np.array(x0, float) + step * np.eye(n)[i] for i in range(n)]
    vals = [f(x) for x in simplex]
    for _ in range(iters):
        order = np.argsort(vals)
        simplex, vals = [simplex[i] for i in order], [vals[i] for i in order]
        if vals[-1] - vals[0] < 1e-6:
            break
        c = np.mean(simplex[:-1], axis=0)
        xr = c + (c - simplex[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = c + 2 * (c - simplex[-1])
            fe = f(xe)
            simplex[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            simplex[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (simplex[-1] - c)
            fc = f(xc)
            if fc < vals[-1]:
                simplex[-1], vals[-1] = xc, fc
            else:
                simplex = [simplex[0] + 0.5 * (s - simplex[0]) for s in simplex]
                vals = [f(s) for s in simplex]
    i = int(np.argmin(vals))
    return simplex[i], vals[i]
