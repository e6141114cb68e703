"""The slash commands' pure parts: filtering as you type, reading a message's first word, Tab's completion."""

from tui.slash_commands import BY_NAME, SLASH_COMMANDS, completion, matching, split_command, typed_command_word


def test_every_command_the_prompt_understands_is_listed():
    assert {"/help", "/system", "/fill", "/image"} <= set(BY_NAME)
    assert all(c.action or c.argument for c in SLASH_COMMANDS)   # each one does something


def test_the_menu_filters_as_you_type():
    assert len(matching("/")) == len(SLASH_COMMANDS)
    assert [c.name for c in matching("/s")] == ["/system", "/sampler"]
    assert [c.name for c in matching("/SY")] == ["/system"]
    assert matching("/zzz") == []


def test_only_a_lone_slash_word_is_being_typed():
    assert typed_command_word("/sys") == "/sys"
    assert typed_command_word("/system be brief") is None
    assert typed_command_word("hello /sys") is None
    assert typed_command_word("/fill a\nb") is None


def test_a_message_is_split_into_its_command_word_and_the_rest():
    assert split_command("/system  Be brief.\nAlways.") == ("/system", "Be brief.\nAlways.")
    assert split_command("/help") == ("/help", "")
    assert split_command("/usr/bin is where it lives") == ("/usr/bin", "is where it lives")
    assert split_command("//help me") is None   # a slash word sent as text
    assert split_command("/") is None and split_command("hello") is None


def test_tab_completes_the_first_match():
    assert completion("/sy") == "stem "     # takes an argument: a space follows
    assert completion("/he") == "lp"
    assert completion("/help") == "" and completion("/nope") == ""
