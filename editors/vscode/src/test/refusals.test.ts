// Unit tests of what the extension says when something cannot run (node --test, no VS Code):
// every refusal is short, in VS Code's terms, and offers the button that removes its cause.
import { strict as assert } from 'assert';
import { test } from 'node:test';
import {
  crashAdvice, profileAdvice, Refusal, refusalAdvice, refusalOf, RefusalKind, splitCommandLine, startFailureAdvice,
} from '../refusals';

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;

test('a refusal is read from the error data only when it is one', () => {
  assert.deepEqual(refusalOf({ refusal: 'no_task', command: 'kblaster.optimize', kernel: 'scale_half', file: 'file:///w/s.cu' }),
                   { refusal: 'no_task', command: 'kblaster.optimize', kernel: 'scale_half', file: 'file:///w/s.cu', detail: undefined });
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
  assert.deepEqual(buttons('no_gpu').map((b) => b.fix), ['replaySettings']);
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
});

test('a command line is split as a shell splits plain words and quotes', () => {
  assert.deepEqual(splitCommandLine('./build/app --size 4096'), ['./build/app', '--size', '4096']);
  assert.deepEqual(splitCommandLine(`  "my app"  'a b' c\\ d ""`), ['my app', 'a b', 'c d', '']);
  assert.deepEqual(splitCommandLine('   '), []);
});
