// Unit tests of what the extension says when something cannot run (node --test, no VS Code):
// every refusal is short, in VS Code's terms, and offers the button that removes its cause.
import { strict as assert } from 'assert';
import { test } from 'node:test';
import {
  commandErrorText, crashAdvice, profileAdvice, Refusal, refusalAdvice, refusalOf, RefusalKind, runEndAdvice, selfTestText, splitCommandLine,
  startFailureAdvice, stoppedAdvice,
} from '../refusals';

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;

test('a refusal is read from the error data only when it is one', () => {
  assert.deepEqual(refusalOf({ refusal: 'no_task', command: 'kblaster.optimize', kernel: 'scale_half', file: 'file:///w/s.cu' }),
                   { refusal: 'no_task', command: 'kblaster.optimize', kernel: 'scale_half', file: 'file:///w/s.cu' });
  assert.equal(refusalOf(undefined), undefined);
  assert.equal(refusalOf('untrusted'), undefined);
  assert.equal(refusalOf({ refusal: 'no_such_kind', command: 'kblaster.optimize' }), undefined);
  assert.equal(refusalOf({ refusal: 'untrusted' }), undefined, 'no command');
  assert.equal(refusalOf({ refusal: 'untrusted', command: 'kblaster.profile', kernel: 7 })?.kernel, undefined);
});

const every: RefusalKind[] = ['untrusted', 'no_task', 'task_unreadable', 'not_saved', 'no_gpu', 'no_model'];

test('every refusal is short, speaks VS Code, names no internal command and offers a button', () => {
  for (const kind of every) {
    const r: Refusal = { refusal: kind, command: 'kblaster.optimize', kernel: 'scale_half', file: 'file:///w/scale_half.cu',
                         detail: 'the daemon\'s own words, which may be long and end in a full stop.' };
    const a = refusalAdvice(r);
    assert.ok(words(a.message) <= 30, `${kind}: ${words(a.message)} words: ${a.message}`);
    assert.ok(a.buttons.length >= 1, `${kind} offers no button`);
    assert.doesNotMatch(a.message, /kblaster\.(optimize|createTask|profile)|file:\/\/|:Kblaster|Neovim|KernelBlaster:/, kind);
    assert.doesNotMatch(a.message, /\.\.$/, `${kind} ends in two full stops`);
  }
});

test('each refusal offers the button that removes its cause', () => {
  const buttons = (kind: RefusalKind) => refusalAdvice({ refusal: kind, command: 'kblaster.optimize', kernel: 'k' }).buttons;
  assert.deepEqual(buttons('untrusted'), [{ title: 'Manage Workspace Trust', fix: 'manageTrust' }]);
  assert.deepEqual(buttons('no_task').map((b) => b.fix), ['createTask', 'setRunCommand']);
  assert.deepEqual(buttons('no_task').map((b) => b.title), ['Create a Task', 'Set the Program to Run']);
  assert.deepEqual(buttons('not_saved').map((b) => b.fix), ['saveAndRetry']);
  assert.deepEqual(buttons('no_gpu').map((b) => b.fix), ['openOnGpuMachine', 'replaySettings']);
  assert.deepEqual(buttons('no_model').map((b) => b.fix), ['modelSettings']);
});

test('the words name what the user asked for', () => {
  assert.match(refusalAdvice({ refusal: 'untrusted', command: 'kblaster.optimize', kernel: 'scale_half' }).message,
               /^Optimize scale_half needs a trusted folder/);
  assert.match(refusalAdvice({ refusal: 'untrusted', command: 'kblaster.profile' }).message, /^Profiling needs a trusted folder/);
  assert.match(refusalAdvice({ refusal: 'not_saved', command: 'kblaster.optimize', file: 'file:///w/my%20prog.cu' }).message,
               /^Save my prog\.cu first/);
  assert.match(refusalAdvice({ refusal: 'no_gpu', command: 'kblaster.optimize', kernel: 'k',
                               detail: 'no NVIDIA driver on this machine: libcuda.so.1 cannot be loaded' }).message, /no NVIDIA driver/);
  assert.match(refusalAdvice({ refusal: 'task_unreadable', command: 'kblaster.optimize', file: 'file:///w/k.cu',
                               detail: 'k.task.json: inputs[0].shape must be a list.' }).message,
               /^The task of k\.cu cannot be read: k\.task\.json: inputs\[0\]\.shape must be a list\.$/);
  // The kernel's own task, with the button that opens it.
  const own = refusalAdvice(refusalOf({ refusal: 'task_unreadable', command: 'kblaster.optimize', kernel: 'scale_half',
                                        file: 'file:///w/ops.cu', detail: "/w/ops.task.json: 'inputs' must be a non-empty array",
                                        taskFile: '/w/ops.task.json' })!);
  assert.equal(own.message, "The task of scale_half (ops.cu) cannot be read: /w/ops.task.json: 'inputs' must be a non-empty array.");
  assert.deepEqual(own.buttons, [{ title: 'Open the Task File', fix: 'openTaskFile' }]);
  // Another kernel of that file: no [Create a Task] over the file that is there.
  const other = refusalAdvice(refusalOf({ refusal: 'no_task', command: 'kblaster.optimize', kernel: 'twice', file: 'file:///w/ops.cu',
                                          taskFile: '/w/ops.task.json' })!);
  assert.match(other.message, /^Optimize twice needs a reference to measure against: ops\.task\.json is the task of another kernel of ops\.cu/);
  assert.deepEqual(other.buttons.map((b) => b.fix), ['setRunCommand', 'openTaskFile']);
});

test('an error that is no refusal is said under what the user asked for, without the daemon\'s command name', () => {
  assert.equal(commandErrorText('optimize scale_half', "kblaster.optimize: replay: no recording of task 'ops'"),
               "Optimize scale_half: replay: no recording of task 'ops'");
  assert.equal(commandErrorText('profile', 'the harness crashed'), 'Profile: the harness crashed');
});

test('a profile that profiled nothing says why where it was asked, never silence', () => {
  const noGpu = profileAdvice({ live: false, liveSkipped: 'no GPU on this machine', liveSkippedReason: 'no_gpu' }, 'scale_half.cu');
  assert.match(noGpu?.message ?? '', /^Compiled scale_half\.cu, not profiled: this machine has no NVIDIA GPU/);
  assert.deepEqual(profileAdvice({ live: false, liveSkippedReason: 'no_ncu' }, 'a.cu')?.buttons.map((b) => b.fix), ['ncuSetting']);
  assert.deepEqual(profileAdvice({ live: false, liveSkippedReason: 'does_not_compile' }, 'a.cu')?.buttons.map((b) => b.fix), ['showProblems']);
  assert.match(profileAdvice({ live: false, liveSkipped: 'a reason a newer daemon has' }, 'a.cu')?.message ?? '', /a reason a newer daemon has\.$/);
  assert.equal(profileAdvice({ live: true }, 'a.cu'), undefined);
  assert.equal(profileAdvice(undefined, 'a.cu'), undefined);
});

test('a daemon that does not start is named with the setting and where it is set', () => {
  const a = startFailureAdvice('/bin/false', 'workspace', 'ended before answering');
  assert.equal(a.message, 'KernelBlaster\'s daemon did not start: /bin/false (kblaster.path in your workspace settings) ended before answering.');
  assert.deepEqual(a.buttons.map((b) => b.title), ['Choose kblaster Executable', 'Show Output']);
  assert.match(startFailureAdvice('kblaster', 'default', 'was not found on PATH').message, /kblaster \(the default kblaster\.path\) was not found on PATH\.$/);
  assert.match(crashAdvice('/opt/kblaster', 5).message, /stopped 5 times/);
  assert.deepEqual(crashAdvice('/opt/kblaster', 5).buttons.map((b) => b.fix), ['showOutput', 'chooseExecutable', 'restart']);
  // The stopped daemon's status item clicked: another executable is offered before the same one again.
  const stopped = stoppedAdvice('/bin/false', 'the daemon did not start: /bin/false ended before answering');
  assert.equal(stopped.message, 'KernelBlaster\'s daemon is not running: the daemon did not start: /bin/false ended before answering. '
    + 'It is started as /bin/false (kblaster.path).');
  assert.deepEqual(stopped.buttons.map((b) => b.fix), ['chooseExecutable', 'restart', 'showOutput']);
});

test('no GPU: the GPU is named, then what works here: a GPU machine (Remote-SSH) or the example replayed', () => {
  const a = refusalAdvice({ refusal: 'no_gpu', command: 'kblaster.optimize', kernel: 'add_one', example: 'row_softmax',
                            detail: 'this machine has no NVIDIA GPU (nvidia-smi found none) to measure candidates on' });
  assert.equal(a.message, 'Optimize add_one needs an NVIDIA GPU to measure on, and this machine has none. Open this folder on a '
    + 'machine with one (Remote-SSH: Connect to Host, then Open Folder), or replay the example row_softmax: a run recorded on a GPU, '
    + 'labelled as replayed.');
  assert.deepEqual(a.buttons.map((b) => b.title), ['Replay the Example', 'Open on a GPU Machine', 'Use Recorded Results']);
  assert.match(refusalAdvice({ refusal: 'no_gpu', command: 'kblaster.optimize', kernel: 'k' }, { remote: 'ssh-remote' }).message,
               /and the machine this window is connected to has none\./);
});

test('a model without its key: the provider setting, the variable and where it must be set, said once', () => {
  const r = refusalOf({ refusal: 'no_model', command: 'kblaster.optimize', kernel: 'vector_add',
    detail: 'no API key: the environment variable OPENAI_API_KEY (set by default) is unset or empty',
    model: 'claude-sonnet-4-5', provider: 'openai', providerFrom: 'default', keyEnv: 'OPENAI_API_KEY', keyEnvFrom: 'default',
    reason: 'no_key', suggestedProvider: 'anthropic', suggestedKeyEnv: 'ANTHROPIC_API_KEY' });
  assert.ok(r);
  const local = refusalAdvice(r!);
  assert.equal(local.message, 'The model claude-sonnet-4-5 cannot be used: its API key is read from the environment variable '
    + 'OPENAI_API_KEY (kblaster.llm.provider is openai (the default)), which is not set in the environment of the KernelBlaster daemon. '
    + 'claude-sonnet-4-5 is an Anthropic model: set kblaster.llm.provider to anthropic; its key is then read from ANTHROPIC_API_KEY, '
    + 'which must be set there.');
  assert.doesNotMatch(local.message, /cannot be used.*cannot be used/);
  assert.deepEqual(local.buttons.map((b) => [b.title, b.fix]), [['Use anthropic', 'useSuggestedProvider'], ['Open Model Settings', 'modelSettings']]);
  assert.match(refusalAdvice(r!, { remote: 'ssh-remote' }).message, /the KernelBlaster daemon on the remote machine\./);
  const gpt = refusalAdvice({ ...r!, model: 'gpt-4o', suggestedProvider: undefined, suggestedKeyEnv: undefined });
  assert.match(gpt.message, /Set it where the daemon starts, or name another variable in kblaster\.llm\.apiKeyEnv\.$/);
  assert.deepEqual(gpt.buttons.map((b) => b.fix), ['modelSettings']);
  // Without the facts (an older daemon, another cause): the cause once.
  assert.equal(refusalAdvice({ refusal: 'no_model', command: 'kblaster.optimize', detail: 'unknown provider "x".' }).message,
               'The model in your KernelBlaster settings cannot be used: unknown provider "x".');
});

test('the end of a run: "done" only when it ran; an error says what stopped it; a replay is not "measured"', () => {
  const missed = runEndAdvice('KernelBlaster: optimize row_softmax', { bestSpeedup: 1, replayed: true, reportPath: '/r/report.md',
    stopReason: 'error: replay: no recording of task \'row_softmax\' with source hash 12ab (the recordings hold 4 evaluations of this task, none of this source); record it on a GPU machine with the live evaluator',
    error: 'replay: no recording of task \'row_softmax\' with source hash 12ab (the recordings hold 4 evaluations of this task, none of this source); record it on a GPU machine with the live evaluator' });
  assert.doesNotMatch(missed.message, /done|1\.00x|measured/);
  assert.match(missed.message, /^KernelBlaster: optimize row_softmax stopped before any result: replay: no recording of task 'row_softmax'/);
  assert.equal(missed.severity, 'warning');
  const replayed = runEndAdvice('KernelBlaster: replay of the example', { bestSpeedup: 31.83, replayed: true, stopReason: 'finished',
    recordedOn: 'NVIDIA H100 80GB HBM3' });
  assert.equal(replayed.message, 'KernelBlaster: replay of the example done: 31.83x faster, replayed from a recording made on an '
    + 'NVIDIA H100 80GB HBM3, not measured here.');
  assert.match(runEndAdvice('t', { bestSpeedup: 1.42, stopReason: 'finished' }).message, /^t done: 1\.42x faster, measured\.$/);
  assert.match(runEndAdvice('t', { bestSpeedup: 1, stopReason: 'budget_candidates' }).message, /no faster version found \(measured\) \(stopped: budget candidates\)/);
});

test('the self-test says its result in words', () => {
  assert.equal(selfTestText({ completedSteps: 20 }), 'Self-test passed: the daemon ran 20 steps with progress and answered.');
  assert.doesNotMatch(selfTestText({ completedSteps: 20 }), /[{}"]/);
  assert.equal(selfTestText({ completedSteps: 3, cancelled: true }), 'Self-test cancelled after 3 steps.');
});

test('a command line is split as a shell splits plain words and quotes', () => {
  assert.deepEqual(splitCommandLine('./build/app --size 4096'), ['./build/app', '--size', '4096']);
  assert.deepEqual(splitCommandLine(`  "my app"  'a b' c\\ d ""`), ['my app', 'a b', 'c d', '']);
  assert.deepEqual(splitCommandLine('   '), []);
});
