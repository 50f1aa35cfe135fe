"""A stand-in for Nsight Compute's ``ncu`` (the real one needs a GPU): what it prints is what
ncu 2024.3 prints for ``--csv --page raw --print-units base`` over one call of the bundled
kernel, or one of the ways that goes wrong. ``NCU_STAND_IN`` picks the output; the command
line it got is written to ``NCU_STAND_IN_ARGS`` (one argument per line).

Modes: ok (one kernel), two (two kernels, thousands grouped), scaled (Kbyte and usecond),
no_kernel, permission (an ==ERROR== line, exit 0), exit (exit status 9), malformed (a value that
is not a number), short_row, no_metric, hang (sleeps, with a grandchild whose pid goes to
``NCU_STAND_IN_PID``). ``NCU_STAND_IN_VERSION=fail`` fails ``--version``.
"""

import os
import subprocess
import sys
import time

PROLOGUE = """==PROF== Connected to process 41207 (/usr/bin/python3.12)
==PROF== Profiling "_rms_norm_tile" - 0: 0%....50%....100% - 9 passes
==PROF== Disconnected from process 41207
"""
HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum",'
    '"dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum"'
)
UNITS = '"","","","","","","","","","","","byte","byte","%","ns"'  # the H200's ncu: "ns"


def launch(index: int, name: str, read: str, write: str, pct: str, ns: str) -> str:
    return (
        f'"{index}","41207","python3.12","127.0.0.1","{name}","1","7","(128, 1, 1)",'
        f'"(4096, 1, 1)","0","9.0","{read}","{write}","{pct}","{ns}"'
    )


OUTPUTS = {
    "ok": [HEADER, UNITS, launch(0, "_rms_norm_tile", "33562624", "33554432", "87.41", "14208")],
    "two": [
        HEADER,
        UNITS,
        launch(0, "_rms_norm_loop", "1,073,741,824", "0", "90.5", "300,000"),
        launch(1, "_rms_norm_loop_store", "1,073,741,824", "1,073,741,824", "80.5", "100,000"),
    ],
    "scaled": [
        HEADER,
        UNITS.replace('"byte","byte","%","ns"', '"Kbyte","Mbyte","%","usecond"'),
        launch(0, "_rms_norm_tile", "1.5", "2.25", "50", "3.5"),
    ],
    "malformed": [HEADER, UNITS, launch(0, "_rms_norm_tile", "n/a", "1", "2", "3")],
    "short_row": [HEADER, UNITS, '"0","41207","python3.12","_rms_norm_tile","1"'],
    "no_metric": [
        HEADER.replace(',"dram__bytes_write.sum"', ""),
        UNITS.replace(',"byte","%"', ',"%"'),
    ],
}


def main(argv: list[str]) -> int:
    mode = os.environ.get("NCU_STAND_IN", "ok")
    if argv == ["--version"]:
        if os.environ.get("NCU_STAND_IN_VERSION") == "fail":
            print("ncu: cannot open libnvperf_host.so", file=sys.stderr)
            return 1
        print("NVIDIA (R) Nsight Compute Command Line Profiler")
        print("Copyright (c) 2018-2024 NVIDIA Corporation")
        print("Version 2024.3.2.0 (build 34861637) (public-release)")
        return 0
    with open(os.environ["NCU_STAND_IN_ARGS"], "w", encoding="utf-8") as handle:
        handle.write("\n".join(argv) + "\n")
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["NCU_STAND_IN_PID"], "w", encoding="utf-8") as handle:
            handle.write(str(child.pid))
        time.sleep(600)
        return 0
    if mode == "exit":
        print("==PROF== Connected to process 41207 (/usr/bin/python3.12)")
        print("RuntimeError: CUDA error: out of memory", file=sys.stderr)
        return 9
    if mode == "no_kernel":
        print("==PROF== Connected to process 41207 (/usr/bin/python3.12)")
        print("==PROF== Disconnected from process 41207")
        print("==WARNING== No kernels were profiled.")
        return 0
    if mode == "permission":
        print("==PROF== Connected to process 41207 (/usr/bin/python3.12)")
        print(
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
            "GPU Performance Counters on the target device 0."
        )
        return 0
    print(PROLOGUE + "\n".join(OUTPUTS[mode]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
