"""perfdata.py -- reads measure.sh's tables (zcoll_perf rows under "## round" headers)."""


def parse_perf(lines, key):
    """{(key..., size): [times]} from zcoll_perf rows (out-of-place time column)."""
    out = {}
    for ln in lines:
        f = ln.split()
        if len(f) >= 14 and f[0].isdigit():
            out.setdefault(key + (int(f[0]),), []).append(float(f[5]))
    return out


def load_shm(path):
    """{(p, algo, bytes): [time per round]}; rounds interleave the algorithms."""
    data, np_, algo, rows = {}, None, None, []
    for ln in open(path):
        if ln.startswith("## round"):
            if rows:
                for k, v in parse_perf(rows, (np_, algo)).items():
                    data.setdefault(k, []).extend(v)
            f = ln.split()
            np_, algo, rows = int(f[4]), f[6], []
        else:
            rows.append(ln)
    for k, v in parse_perf(rows, (np_, algo)).items():
        data.setdefault(k, []).extend(v)
    return data
