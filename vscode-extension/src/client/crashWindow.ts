/** Counts crashes in a sliding time window: restart while fewer than `limit` happened. Pure. */
export class CrashWindow {
  private times: number[] = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Records a crash at `now`; true when the server may be restarted once more. */
  record(now: number): boolean {
    this.times = this.times.filter((t) => now - t < this.windowMs);
    this.times.push(now);
    return this.times.length < this.limit;
  }

  reset(): void {
    this.times = [];
  }
}
