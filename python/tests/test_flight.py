"""The flight recorder from Python: Comm.dump() writes the collectives made, oldest first."""
import numpy as np
import zcoll


def test_dump_lists_the_calls(tmp_path):
    prefix = tmp_path / "fr"
    with zcoll.Comm(config={"FLIGHT_RECORDER_FILE": str(prefix)}) as comm:
        comm.allreduce(np.ones(3, np.float32))
        comm.allreduce(np.ones(5, np.float64), op=zcoll.MAX)
        comm.dump()
    lines = (tmp_path / "fr.0").read_text().splitlines()
    fields = [dict(w.split("=", 1) for w in line.split()[2:]) for line in lines]
    assert fields[0]["next_seq"] == "2" and fields[0]["last_done"] == "1", lines[0]
    assert fields[0]["trigger"] == "request" and fields[0]["entries"] == "2", lines[0]
    got = [(f["seq"], f["kind"], f["count"], f["dtype"], f["op"], f["state"]) for f in fields[1:]]
    assert got == [("0", "allreduce", "3", "float32", "sum", "done"),
                   ("1", "allreduce", "5", "float64", "max", "done")], lines
