"""The chat screen: transcript with the live canvas, prompt, attachments, sampler panel and status bar. It renders
and handles keys; the turn logic is `tui.session.ChatSession` (this screen is its `ChatView`); it never touches
MLX (the session reads frames from the backend's slot on a 30 Hz timer). Its collaborators act: the prompt and
the slash commands `tui.screens.prompt_commands`, revise mode and replay `diffusion_keys`, copying `answer_copy`.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, TextArea

from engine.events import ModelInfo, Step
from engine.settings import Settings

from ..session import ChatSession
from ..session.frame_pacer import FRAME_INTERVAL_S
from ..records import Conversation, Message, Place
from ..widgets.answer_text import SpanSelector
from ..widgets.attachments import AttachmentBar, AttachmentsChanged
from ..widgets.canvas import TokenTexts
from ..widgets.example_prompts import ExamplePrompts
from ..widgets.messages import AssistantMessage, UserMessage
from ..widgets.prompt import PromptInput
from ..widgets.sampler_panel import SamplerPanel
from ..widgets.slash_menu import SlashMenu
from ..widgets.status_bar import StatusBar
from ..widgets.token_count import TokenCount
from ..widgets.transcript import Transcript
from .answer_copy import AnswerCopy
from .compare import CompareScreen
from .diffusion_keys import DiffusionKeys
from .prompt_commands import PromptCommands
from .prompt_count import PromptCounter

class ChatScreen(Screen):
    BINDINGS = [
        # In the order the footer shows them: what a new user needs first survives 80 columns. Cancel is always
        # listed (hiding it while idle would rebuild the footer at every answer's start and end).
        Binding("ctrl+o", "app.conversations", "Chats"),
        Binding("ctrl+l", "app.choose_model", "Model"),
        Binding("f1", "app.help", "Help"),
        Binding("ctrl+q", "app.quit", "Quit"),   # (the app's priority binding runs it; this places it)
        Binding("escape", "cancel_generation", "Cancel"),
        Binding("ctrl+n", "new_conversation", "New"),
        Binding("ctrl+b", "toggle_sampler", "Sampler"),
        Binding("ctrl+g", "regenerate", "Regenerate"),
        Binding("ctrl+k", "compare_revisions", "Compare"),
        Binding("ctrl+f", "attach_image", "Image",
                tooltip="Attach an image (greyed out: the loaded model is text-only)"),
        Binding("ctrl+r", "replay", "Replay", show=False),   # (the footer is full at 110 columns)
        Binding("ctrl+t", "toggle_thinking", "Thinking", show=False),
        Binding("ctrl+y", "copy_answer", "Copy", show=False),
        Binding("ctrl+shift+c", "copy_code", "Copy code", show=False),
        Binding("ctrl+up", "walk_turns(-1)", "Earlier message", show=False),
        Binding("ctrl+down", "walk_turns(1)", "Later message", show=False),
        Binding("tab", "tab_from_prompt", "Focus next", show=False),
    ]

    def __init__(self, make_session: Callable[["ChatScreen"], ChatSession]):
        """`make_session(view)` builds the turn logic this screen shows (the screen is its `ChatView`)."""
        super().__init__()
        self.session = make_session(self)
        self.commands = PromptCommands(self)       # what Enter does with the prompt, attachments, editing
        self.diffusion_keys = DiffusionKeys(self)  # revise mode and replay
        self.copier = AnswerCopy(self)             # answers, code, reasoning and selections to the clipboard
        self.token_texts: TokenTexts | None = None
        self.canvas_mode = "candidates"
        self.editing: UserMessage | None = None   # the earlier message being edited in the prompt
        self.shown_model: ModelInfo | None = None
        self.counter = PromptCounter(self)
        # One counter for the screen's life: narrow, it moves under the message box by a class on #prompt-row
        # (PromptCounter.place), never by remounting, so a count from the worker thread always finds it.
        self.token_count = TokenCount(id="token-count")

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            with Vertical(id="chat"):
                yield Transcript(id="transcript")
                with Vertical(id="prompt-area"):
                    yield Static("", id="edit-banner", markup=False)
                    yield AttachmentBar(id="attachments")
                    yield Static("", id="completions", markup=False)
                    yield SlashMenu(id="slash-menu")
                    with Horizontal(id="prompt-row"):
                        yield PromptInput(id="prompt", placeholder="Message · Enter sends · ctrl+j: new line · "
                                          "/ lists the commands")
                        yield self.token_count
            yield SamplerPanel(id="sampler")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "New conversation"
        self._frame_timer = self.set_interval(FRAME_INTERVAL_S, self.session.poll, pause=True)
        self.transcript.anchor()
        self.status_bar.set_thinking(self.session.think)
        self.prompt.focus()

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def attachments(self) -> AttachmentBar:
        return self.query_one(AttachmentBar)

    def focus_prompt(self, typed: str = "") -> None:
        self.set_focus(self.prompt)   # now, not after the queued keys: a burst of typing must not reach a turn's keys
        if typed:   # typing that landed in the transcript, in at the message box's cursor
            self.prompt.insert(typed)

    # ---- the loaded model (set by the app) --------------------------------------------------------------

    async def show_model(self, model: ModelInfo | None, settings: Settings, canvas_mode: str) -> None:
        """Show the loaded (or no) model and its family's sampler settings."""
        self.token_texts = TokenTexts(model.token_text) if model else None
        self.canvas_mode = canvas_mode
        self.status_bar.set_model(model.name if model else None, model.label if model else "")
        self.status_bar.set_activity("ready" if model else "choose a model (ctrl+l)")
        self.sub_title = f"{model.name} · {model.label}" if model else ""
        await self.query_one(SamplerPanel).show_settings(model.family if model else None, settings, canvas_mode,
                                                         dict(model.setting_defaults) if model else {},
                                                         model.offered_settings if model else None)
        self.recount()
        if model and not model.supports_images and self.attachments.attachments:
            self.notify(f"{model.name} is text-only: remove the image attachments before sending.",
                        severity="warning", markup=False)
        self.shown_model = model  # last: the screen now shows this model (its panel is rebuilt)
        self.refresh_bindings()   # ctrl+f greys out for a text-only model
        self.prompt.completes_paths = self.commands.images_refused() is None

    async def show_examples(self, prompts: Sequence[str]) -> None:
        await self.transcript.show_examples(prompts)

    @on(ExamplePrompts.Chosen)
    def _example_chosen(self, message: ExamplePrompts.Chosen) -> None:
        """One Enter or click on an example sends it, as if typed and sent."""
        message.stop()
        self.prompt.value = message.text
        self.prompt.focus()
        self.prompt.post_message(PromptInput.Submitted(self.prompt, message.text))

    def action_tab_from_prompt(self) -> None:
        """Tab from the empty chat's message box goes to the first example prompt (the next focusable widget in
        the layout is the transcript's scroll area, which shows no focus); elsewhere Tab moves on as usual."""
        examples = self.query("ExamplePrompt")
        if self.focused is self.prompt and examples and examples.first().display:
            examples.first().focus()
        else:
            self.focus_next()

    def show_canvas_mode(self, mode: str) -> None:
        self.canvas_mode = mode
        self.query_one(SamplerPanel).show_canvas_mode(mode)

    def action_toggle_sampler(self) -> None:
        self.query_one(SamplerPanel).toggle_class("-open")
        self._fit_prompt_row()

    def on_sampler_panel_closed(self, event: SamplerPanel.Closed) -> None:
        event.stop()
        self._fit_prompt_row()
        self.prompt.focus()

    def on_resize(self) -> None:
        self._fit_prompt_row()

    def _fit_prompt_row(self) -> None:
        self.counter.place(self.query_one(SamplerPanel))

    # ---- the prompt and the diffusion keys (their collaborators act) --------------------------------------

    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        await self.commands.submitted(event)

    def on_prompt_input_completions(self, event: PromptInput.Completions) -> None:
        self.commands.completions(event)

    def on_user_message_edit_requested(self, event: UserMessage.EditRequested) -> None:
        self.commands.edit_requested(event)

    def attach(self, path: str) -> bool:
        return self.commands.attach(path)

    def stop_editing(self, clear: bool = False) -> None:
        self.commands.stop_editing(clear)

    def action_edit_last_message(self) -> None:
        self.commands.edit_last_message()

    def action_attach_image(self) -> None:
        self.commands.attach_image()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # None: shown disabled in the footer (its tooltip says why), and the key does nothing.
        if action == "attach_image" and self.commands.images_refused():
            return None
        return super().check_action(action, parameters)

    @on(TextArea.Changed, "#prompt")
    def _follow_slash_menu(self) -> None:
        self.commands.text_changed()

    def action_system_prompt(self) -> None:
        self.commands.system_prompt()

    async def action_revise_answer(self) -> None:
        await self.diffusion_keys.revise_answer()

    async def on_assistant_message_revise_requested(self, event: AssistantMessage.ReviseRequested) -> None:
        await self.diffusion_keys.revise_requested(event)

    async def on_span_selector_revise(self, event: SpanSelector.Revise) -> None:
        await self.diffusion_keys.revise(event)

    def action_replay(self) -> None:
        self.diffusion_keys.replay()

    # ---- ChatView: what the session asks for --------------------------------------------------------------

    async def show_user(self, message: Message, image_labels: Sequence[str], place: Place) -> None:
        await self.transcript.add_user(message, image_labels, place)
        self.attachments.clear()

    async def start_answer(self, message_id: int | None) -> AssistantMessage:
        shown = self.transcript.answer(message_id) if message_id is not None else None
        if shown is None:
            return await self.transcript.add_answer()
        await shown.restart()
        shown.scroll_visible(animate=False)
        return shown

    async def add_text(self, answer: AssistantMessage, content: str, reasoning: str) -> None:
        await answer.add_block(content, reasoning)

    def show_block_steps(self, answer: AssistantMessage, block: int, accepted_per_step: Sequence[int],
                         edits: int) -> None:
        answer.block_steps.add(block, accepted_per_step, edits)

    def show_filled(self, answer: AssistantMessage, spans: Sequence[tuple[int, int]]) -> None:
        answer.show_filled(spans)

    def show_frame(self, answer: AssistantMessage, step: Step, total_blocks: int | None) -> None:
        answer.show_frame(step, self.token_texts, self.canvas_mode, total_blocks)

    def show_live_steps(self, accepted_per_step: Sequence[int]) -> None:
        self.status_bar.set_live_steps(accepted_per_step)

    def show_canvas_note(self, answer: AssistantMessage, text: str) -> None:
        answer.show_canvas_note(text)

    async def finish_answer(self, answer: AssistantMessage, status: str, note: str, place: Place | None) -> None:
        answer.finish(status, note, place)
        self.recount()

    async def show_answer(self, message: Message, place: Place) -> None:
        shown = self.transcript.answer(message.id)
        if shown is not None:
            await shown.show_revision(message, place)

    async def show_conversation(self, conversation: Conversation | None, places: Mapping[int, Place]) -> None:
        self.stop_editing()
        await self.transcript.show(conversation, places)
        self.attachments.clear()
        messages = conversation.messages if conversation is not None else ()
        self.prompt.set_history([m.content for m in messages if m.role == "user"])
        self.prompt.focus()
        self.recount()   # another conversation: another prompt to count

    def show_system_prompt(self, text: str | None) -> None:
        self.transcript.show_system_prompt(text)

    def focus_message(self, message_id: int) -> None:
        turn = self.transcript.turn(message_id)
        if turn is not None:
            turn.focus()

    def set_live(self, live: bool) -> None:
        if live:
            self._frame_timer.resume()
        else:
            self._frame_timer.pause()

    def show_activity(self, text: str) -> None:
        self.status_bar.set_activity(text)

    def show_thinking(self, on: bool) -> None:
        self.status_bar.set_thinking(on)
        self.recount()   # the template counts the thinking switch too

    def show_title(self, title: str) -> None:
        self.title = title

    def notify(self, message: str, severity: str = "information", **options) -> None:
        # Model output and file names are never markup.
        options.setdefault("markup", False)
        super().notify(message, severity=severity, **options)

    # ---- the prompt's token count ----------------------------------------------------------------------

    @on(TextArea.Changed, "#prompt")
    @on(AttachmentsChanged)
    def recount(self) -> None:
        """Count the next turn's prompt (history + what is typed + attachments) once typing pauses."""
        self.counter.recount()

    # ---- keys: answers, revisions, branches ---------------------------------------------------------------

    def action_cancel_generation(self) -> None:
        """Esc: cancel the answer being written; else stop editing; else back to the prompt."""
        if self.session.generation is not None:
            self.session.cancel()
        elif self.editing is not None:
            self.stop_editing(clear=True)
        elif self.focused is not self.prompt:
            self.prompt.focus()

    async def action_regenerate(self) -> None:
        await self.session.regenerate()

    def _target_answer(self) -> AssistantMessage | None:
        """The focused answer, else the last one shown."""
        focused = self.focused
        return focused if isinstance(focused, AssistantMessage) else self.transcript.last_answer()

    def action_compare_revisions(self) -> None:
        target = self._target_answer()
        found = self.session.answer_revisions(target.message_id if target is not None else None)
        if found is None:
            return
        message, revisions = found
        model = self.session.model
        defaults = dict(model.setting_defaults) if model is not None else {}

        async def show(number: int | None) -> None:
            if number is not None and number != message.revision:
                await self.session.show_revision(message.id, number)

        self.app.push_screen(CompareScreen(revisions, message.revision, defaults), show)

    async def action_switch_revision(self, delta: int) -> None:
        target = self._target_answer()
        if target is None or target.message_id is None:
            self.notify("There is no saved answer to switch revisions of.")
            return
        await self.session.switch_revision(target.message_id, delta)

    @on(AssistantMessage.RevisionRequested)
    async def _revision_requested(self, event: AssistantMessage.RevisionRequested) -> None:
        event.stop()
        await self.session.switch_revision(event.message_id, event.delta)

    @on(UserMessage.BranchRequested)
    async def _branch_requested(self, event: UserMessage.BranchRequested) -> None:
        event.stop()
        await self.session.switch_branch(event.message_id, event.delta)

    def action_walk_turns(self, delta: int) -> None:
        if not self.transcript.walk(delta, self.focused) and delta > 0:
            self.prompt.focus()

    async def action_new_conversation(self) -> None:
        await self.session.open(None)

    def action_toggle_thinking(self) -> None:
        self.session.toggle_thinking()

    # ---- copying (tui.screens.answer_copy) ---------------------------------------------------------------

    def action_copy_answer(self) -> None:
        self.copier.answer()

    def action_copy_code(self) -> None:
        self.copier.part("code")

    def action_copy_reasoning(self) -> None:
        self.copier.part("reasoning")

    @on(AssistantMessage.CopyRequested)
    def _copy_requested(self, event: AssistantMessage.CopyRequested) -> None:
        event.stop()
        self.copier.copy(event.text, event.what)

    def on_text_selected(self, event: events.TextSelected) -> None:
        self.copier.selection()
