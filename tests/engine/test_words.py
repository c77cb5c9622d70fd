"""``engine.words.Words``: a declaration's words in both languages, side by side."""
import pytest

from engine.words import Words


def test_words_are_picked_by_the_pages_language():
    w = Words("Crash", "崩溃")
    assert (w.in_("en"), w.in_("zh"), w.in_("zh-hans"), w.in_("fr"), str(w)) == ("Crash", "崩溃", "崩溃", "Crash", "Crash")


@pytest.mark.parametrize("en, zh", [("Crash", ""), ("", "崩溃"), ("  ", "崩溃")])
def test_words_need_both_languages(en, zh):
    """A declaration missing one language fails where it is written, not on a Chinese page."""
    with pytest.raises(ValueError, match="both languages"):
        Words(en, zh)
