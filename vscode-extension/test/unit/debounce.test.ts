import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Debouncer, KeyedBatcher } from '../../src/util/debounce';
import type { Clock } from '../../src/util/debounce';

/** A clock that moves only when told to. */
class FakeClock implements Clock {
  time = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private next = 1;

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.set(id, { at: this.time + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= end).sort((x, y) => x[1].at - y[1].at)[0];
      if (!due) {
        break;
      }
      this.timers.delete(due[0]);
      this.time = due[1].at;
      due[1].fn();
    }
    this.time = end;
  }
}

describe('Debouncer', () => {
  test('a burst runs the action once, after the quiet time', () => {
    const clock = new FakeClock();
    let runs = 0;
    const d = new Debouncer(() => runs++, { delayMs: 100, clock });
    for (let i = 0; i < 5; i++) {
      d.trigger();
      clock.advance(50);
    }
    assert.equal(runs, 0); // 50 ms after the last trigger
    clock.advance(49);
    assert.equal(runs, 0);
    clock.advance(1);
    assert.equal(runs, 1);
    clock.advance(1000);
    assert.equal(runs, 1);
  });

  test('maxWaitMs lets a steady stream through', () => {
    const clock = new FakeClock();
    const times: number[] = [];
    const d = new Debouncer(() => times.push(clock.now()), { delayMs: 100, maxWaitMs: 300, clock });
    for (let i = 0; i < 20; i++) {
      d.trigger();
      clock.advance(50);
    }
    assert.deepEqual(times.slice(0, 3), [300, 600, 900]);
  });

  test('flush runs a pending action now; cancel drops it; dispose stops it for good', () => {
    const clock = new FakeClock();
    let runs = 0;
    const d = new Debouncer(() => runs++, { delayMs: 100, clock });
    d.flush();
    assert.equal(runs, 0);
    d.trigger();
    assert.equal(d.pending, true);
    d.flush();
    assert.equal(runs, 1);
    assert.equal(d.pending, false);
    d.trigger();
    d.cancel();
    clock.advance(500);
    assert.equal(runs, 1);
    d.dispose();
    d.trigger();
    clock.advance(500);
    assert.equal(runs, 1);
  });
});

describe('KeyedBatcher', () => {
  test('each key added during a burst is handed over once, in order', () => {
    const clock = new FakeClock();
    const batches: string[][] = [];
    const b = new KeyedBatcher<string>((keys) => batches.push(keys), { delayMs: 250, clock });
    b.add('a', 'b');
    clock.advance(100);
    b.add('a', 'c');
    clock.advance(249);
    assert.deepEqual(batches, []);
    clock.advance(1);
    assert.deepEqual(batches, [['a', 'b', 'c']]);
    b.add('d');
    b.flush();
    assert.deepEqual(batches, [['a', 'b', 'c'], ['d']]);
  });

  test('dispose drops what is pending', () => {
    const clock = new FakeClock();
    const batches: string[][] = [];
    const b = new KeyedBatcher<string>((keys) => batches.push(keys), { delayMs: 10, clock });
    b.add('x');
    b.dispose();
    clock.advance(100);
    assert.deepEqual(batches, []);
  });
});
