"""bench/gpu_clocks.py: what the busy samples of a device call's clock log say (made-up rows)."""
import sys
import unittest

from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from gpu_clocks import line, summarize  # noqa: E402 (bench/ just put on the path)


def row(sm, load, temperature="50", power="600.0", reasons="0x0000000000000000"):
    return {"timestamp": "2026/12/07 10:00:00.000", "clocks.sm": sm, "clocks.mem": "2619", "utilization.gpu": load,
            "temperature.gpu": temperature, "power.draw": power, "clocks_event_reasons.active": reasons}


class Summary(unittest.TestCase):
    def test_only_busy_samples_count_and_slowdowns_are_named(self):
        rows = [row("345", "0", reasons="0x0000000000000001"),  # idle: neither its clock nor its reason counts
                row("1980", "100", temperature="58", power="690.5"),
                row("1755", "97", temperature="66", reasons="0x0000000000000024"),  # power cap, thermal
                row("1830", "99"),
                row("[N/A]", "99", power="[N/A]")]  # unreadable fields are skipped
        s = summarize(rows)
        self.assertEqual(s["samples"], 3)
        self.assertEqual(s["sm_mhz"], (1755, 1830, 1980))
        self.assertEqual((s["max_temperature_c"], s["max_power_w"]), (66, 690.5))
        self.assertEqual(s["reasons"], ["software power cap", "software thermal slowdown"])
        self.assertIn("SM 1755-1980 MHz (median 1830)", line(s))
        self.assertIn("slowdowns: software power cap, software thermal slowdown", line(s))

    def test_an_idle_log_says_so(self):
        self.assertIsNone(summarize([row("345", "0"), row("1980", "10")]))
        self.assertEqual(line(None), "GPU clocks: no sample with the GPU at work")

    def test_an_older_drivers_log_without_reasons(self):
        rows = [{k: v for k, v in row("1980", "100").items() if k != "clocks_event_reasons.active"}]
        self.assertEqual(summarize(rows)["reasons"], [])
        self.assertIn("slowdowns: none", line(summarize(rows)))


if __name__ == "__main__":
    unittest.main()
