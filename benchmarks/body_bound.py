"""Peak memory of one chat call whose answer no client should hold (issue 22 item 1): a gzip body of
384 MiB of zeros, or a chunked body without end (the test server stops at 1 GiB), against the lean
transport. Run it with PYTHONPATH pointing at the sources to measure (an older checkout for the
"before" figure):

    PYTHONPATH=src .venv/bin/python benchmarks/body_bound.py gzip
"""
import asyncio, resource, sys, subprocess, time, socket
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "tests"))
from support.helpers import free_port, wait_http
kind = sys.argv[1]
port = free_port()
srv = subprocess.Popen([sys.executable, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "tests" / "support" / "fake_openai.py"), str(port), "--big-body", kind], stderr=subprocess.DEVNULL)
wait_http(f"http://127.0.0.1:{port}/stats", proc=srv)
from agorabench.models.openai_compat import LeanOpenAIBackend
from agorabench.models.base import GenerationSettings
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.time()
async def go():
    b = LeanOpenAIBackend("fake", base_url=f"http://127.0.0.1:{port}/v1", timeout=20)
    try:
        await b.complete([{"role": "user", "content": "hi"}], GenerationSettings())
    except Exception as e:
        print("error:", str(e)[:90])
    finally:
        await b.aclose()
asyncio.run(go())
print(f"{kind}: peak RSS grew {(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)/1024:.0f} MiB in {time.time()-t:.1f} s")
srv.terminate()
