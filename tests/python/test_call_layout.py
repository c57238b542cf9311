"""CallLayout: a call put in the layout of the call apply() traced, when both bind the same
parameters of the forward; None for every call that binds others or does not bind."""
import unittest

from autokernel.runtime.call_layout import CallLayout

SENTINEL = object()


def forward(input_ids, attention_mask=None, labels=None, *, use_cache=SENTINEL, **kwargs):
    pass


def positional_only(x, /, scale=1.0):
    pass


def with_args(*args):
    pass


class Arrange(unittest.TestCase):
    def test_the_same_parameters_by_position_or_by_name_take_the_traced_layout(self):
        traced_by_position = CallLayout(forward, 1, ["labels"])  # forward(ids, labels=y)
        for args, kwargs in ((("x",), {"labels": "y"}),
                             ((), {"input_ids": "x", "labels": "y"}),
                             (("x", None, "y"), {}),
                             (("x",), {"labels": "y", "attention_mask": None, "use_cache": SENTINEL})):
            with self.subTest(args=args, kwargs=kwargs):
                self.assertEqual(traced_by_position.arrange(args, kwargs), (("x",), {"labels": "y"}))
        traced_by_name = CallLayout(forward, 0, ["input_ids", "extra"])  # forward(input_ids=x, extra=z)
        self.assertEqual(traced_by_name.arrange(("x",), {"extra": "z"}), ((), {"input_ids": "x", "extra": "z"}))

    def test_a_left_out_parameter_takes_its_default_and_must_match_the_traced_value_later(self):
        # forward(ids, attention_mask=m) traced; a call without the mask arranges to the default
        # None, which the capture's own check then refuses against the traced tensor.
        self.assertEqual(CallLayout(forward, 2, []).arrange(("x",), {}), (("x", None), {}))

    def test_calls_that_bind_other_parameters_or_none_have_no_layout(self):
        layout = CallLayout(forward, 1, ["labels"])
        for args, kwargs in ((("x",), {"labels": "y", "attention_mask": "m"}),  # a parameter not traced
                             (("x",), {"labels": "y", "use_cache": False}),  # not its very default
                             (("x",), {"labels": "y", "other": 1}),  # a keyword the traced call had not
                             (("x",), {"input_ids": "x", "labels": "y"}),  # bound twice
                             (("x", None, "y", "w"), {}),  # too many positions
                             ((), {"labels": "y"})):  # input_ids has no default
            with self.subTest(args=args, kwargs=kwargs):
                self.assertIsNone(layout.arrange(args, kwargs))
        self.assertIsNone(CallLayout(forward, 1, ["extra"]).arrange(("x",), {}))  # **kwargs name left out
        self.assertIsNone(CallLayout(positional_only, 1, []).arrange((), {"x": 1}))
        self.assertIsNone(CallLayout(with_args, 1, []).arrange((1,), {}))  # traced through *args


if __name__ == "__main__":
    unittest.main()
