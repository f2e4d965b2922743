/**
 * The "Living Memory" view in the explorer: the current context grouped by tier, the
 * contradictions to review (open ones, then suspected ones, marked), the candidate pairs that
 * wait for a judge (apart: they are not contradictions yet), and the memories awaiting
 * review before they are shared with the team (approve / edit / reject inline). Items open
 * their full text.
 */
import * as vscode from 'vscode';
import type { ServerManager } from '../client/serverManager';
import { COMMANDS, VIEW_ID } from '../ids';
import type { Contradiction, ReviewItem, StaleMemory } from '../protocol/commands';
import { TIERS } from '../protocol/notifications';
import type { ContextItem, ContextUpdatedParams, Tier } from '../protocol/notifications';
import type { ContextStore } from '../view/contextStore';
import { contradictionCounts, contradictionLabel, formatTokens, kindIcon, TIER_TITLES } from '../view/format';
import { pendingCount, pendingLabel, pendingTooltip } from '../view/pending';
import { reviewDescription, reviewLabel, reviewTooltip } from '../view/review';
import { activeFileUri } from './common';

type Node =
  | { type: 'tier'; tier: Tier; update: ContextUpdatedParams }
  | { type: 'item'; item: ContextItem; folder: string }
  | { type: 'contradictions'; list: Contradiction[]; folder: string }
  | { type: 'contradiction'; contradiction: Contradiction; folder: string }
  | { type: 'pendingPairs'; list: Contradiction[]; folder: string }
  | { type: 'pendingPair'; contradiction: Contradiction; folder: string }
  | { type: 'reviews'; list: ReviewItem[]; folder: string }
  | { type: 'review'; item: ReviewItem; folder: string }
  | { type: 'stale'; list: StaleMemory[]; folder: string }
  | { type: 'staleMemory'; memory: StaleMemory; folder: string }
  | { type: 'message'; text: string };


export class MemoryView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<Node | undefined>();
  private contradictions:
    | { folder: string; list: Contradiction[]; stale: StaleMemory[]; pending: Contradiction[] }
    | undefined;
  private reviews: { folder: string; list: ReviewItem[] } | undefined;
  private readonly view: vscode.TreeView<Node>;
  private readonly disposables: { dispose(): unknown }[] = [];

  readonly onDidChangeTreeData = this.changeEmitter.event;

  constructor(
    private readonly manager: ServerManager,
    private readonly store: ContextStore,
  ) {
    this.view = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.view,
      this.changeEmitter,
      store.onDidChange(() => {
        void this.refresh();
      }),
      manager.onDidChangeState(() => {
        void this.refresh();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => {
        void this.refresh();
      }),
      this.view.onDidChangeVisibility((e) => {
        if (e.visible) {
          void this.refresh();
        }
      }),
    );
  }

  /** Re-reads the contradictions (when the view is visible) and redraws. */
  async refresh(): Promise<void> {
    const update = this.store.current(activeFileUri());
    if (this.view.visible && update && this.manager.state === 'running') {
      try {
        const result = await this.manager.api.contradictions({ status: 'review', folder: update.folder });
        const pending = await this.manager.api.contradictions({ status: 'pending', folder: update.folder });
        this.contradictions = {
          folder: update.folder,
          list: result.contradictions,
          stale: result.stale ?? [],
          pending: pending.contradictions,
        };
      } catch (e) {
        this.manager.log.warn(`listing contradictions failed: ${String(e)}`);
      }
      try {
        const result = await this.manager.api.reviewList({ folder: update.folder });
        this.reviews = { folder: update.folder, list: result.items };
      } catch (e) {
        this.manager.log.warn(`listing memories awaiting review failed: ${String(e)}`);
      }
    }
    this.view.description = update ? `${formatTokens(update.tokens.total)}/${formatTokens(update.tokens.budget)}` : '';
    this.changeEmitter.fire(undefined);
  }

  /** Re-reads the memories awaiting review in `folder` (after approve, edit, reject, share). */
  async refreshReviews(folder: string | undefined): Promise<void> {
    const target = folder ?? this.store.current(activeFileUri())?.folder;
    if (target === undefined || this.manager.state !== 'running') {
      return;
    }
    try {
      const result = await this.manager.api.reviewList({ folder: target });
      this.reviews = { folder: target, list: result.items };
      this.manager.log.debug(`review: ${result.items.length} memories await review in ${target}`);
    } catch (e) {
      this.manager.log.warn(`listing memories awaiting review failed: ${String(e)}`);
    }
    this.changeEmitter.fire(undefined);
  }

  getChildren(node?: Node): Node[] | Promise<Node[]> {
    const update = this.store.current(activeFileUri());
    if (!node) {
      if (this.manager.state !== 'running' || !update) {
        return [];
      }
      const roots: Node[] = TIERS.map((tier) => ({ type: 'tier', tier, update }));
      if (this.contradictions && this.contradictions.folder === update.folder) {
        roots.push({ type: 'contradictions', list: this.contradictions.list, folder: update.folder });
        if (this.contradictions.pending.length > 0) {
          roots.push({ type: 'pendingPairs', list: this.contradictions.pending, folder: update.folder });
        }
        if (this.contradictions.stale.length > 0) {
          roots.push({ type: 'stale', list: this.contradictions.stale, folder: update.folder });
        }
      }
      if (this.reviews && this.reviews.folder === update.folder) {
        roots.push({ type: 'reviews', list: this.reviews.list, folder: update.folder });
      }
      return roots;
    }
    switch (node.type) {
      case 'tier':
        return this.tierChildren(node.update, node.tier);
      case 'contradictions':
        return node.list.length === 0
          ? [{ type: 'message', text: 'No open or suspected contradictions' }]
          : node.list.map((contradiction) => ({ type: 'contradiction', contradiction, folder: node.folder }));
      case 'reviews':
        return node.list.length === 0
          ? [{ type: 'message', text: 'No memory awaits review' }]
          : node.list.map((item) => ({ type: 'review', item, folder: node.folder }));
      case 'stale':
        return node.list.map((memory) => ({ type: 'staleMemory', memory, folder: node.folder }));
      case 'pendingPairs':
        return node.list.map((contradiction) => ({ type: 'pendingPair', contradiction, folder: node.folder }));
      default:
        return [];
    }
  }

  private tierChildren(update: ContextUpdatedParams, tier: Tier): Node[] {
    const items = update.items.filter((i) => i.tier === tier);
    if (items.length === 0) {
      return [{ type: 'message', text: 'Nothing in this tier' }];
    }
    return items.map((item) => ({ type: 'item', item, folder: update.folder }));
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.type) {
      case 'tier': {
        const usage = node.update.tokens.tiers[node.tier];
        const item = new vscode.TreeItem(
          TIER_TITLES[node.tier],
          usage.items > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
        );
        item.description = `${formatTokens(usage.used)}/${formatTokens(usage.budget)} · ${usage.items} item${usage.items === 1 ? '' : 's'}`;
        item.contextValue = 'tier';
        item.id = `tier:${node.tier}`;
        return item;
      }
      case 'item': {
        const { item: ctx, folder } = node;
        const label = ctx.memoryId === null ? ctx.key : (ctx.label ?? `#${ctx.memoryId}`);
        const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
        item.description = `${ctx.kind} · ${ctx.level} · ${formatTokens(ctx.tokens)}`;
        item.tooltip = `${ctx.kind} #${ctx.memoryId ?? '-'} (${ctx.key}) · shown at level ${ctx.level} · ${ctx.tokens} tokens · score ${ctx.score}`;
        if (ctx.stale) {
          item.description = `${ctx.stale.state === 'gone' ? 'stale' : 'changed since'} · ${item.description}`;
          item.tooltip += `\n\n${ctx.stale.notes.join('\n')}`;
        }
        item.iconPath = new vscode.ThemeIcon(kindIcon(ctx.kind));
        if (ctx.memoryId !== null) {
          item.contextValue = 'memory';
          item.command = {
            command: COMMANDS.openMemory.id,
            title: 'Open Memory',
            arguments: [{ id: ctx.memoryId, folder }],
          };
        }
        return item;
      }
      case 'contradictions': {
        const item = new vscode.TreeItem(
          'Contradictions',
          node.list.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
        );
        item.description = contradictionCounts(node.list);
        item.iconPath = new vscode.ThemeIcon('git-compare');
        item.id = 'contradictions';
        return item;
      }
      case 'contradiction': {
        const c = node.contradiction;
        const item = new vscode.TreeItem(contradictionLabel(c), vscode.TreeItemCollapsibleState.None);
        const suspected = c.status === 'suspected';
        item.tooltip =
          (suspected ? 'Suspected (a weak finding, not in any context until confirmed)\n\n' : '') +
          `${c.a?.text ?? ''}\n\n⟷\n\n${c.b?.text ?? ''}${c.reason ? `\n\n(${c.reason})` : ''}`;
        item.description = c.status;
        item.contextValue = 'contradiction';
        item.iconPath = new vscode.ThemeIcon(suspected ? 'question' : 'warning');
        item.command = {
          command: COMMANDS.resolveContradictions.id,
          title: 'Resolve',
          arguments: [{ id: c.id, folder: node.folder }],
        };
        return item;
      }
      case 'pendingPairs': {
        const item = new vscode.TreeItem('Candidate contradictions', vscode.TreeItemCollapsibleState.Collapsed);
        item.description = pendingCount(node.list);
        item.tooltip =
          'Memories on one subject that may contradict each other: a judge (the configured model or the ' +
          'editor’s language models) or you decide. Never shown in a context while they wait.';
        item.iconPath = new vscode.ThemeIcon('question');
        item.contextValue = 'pendingPairs';
        item.id = 'pendingPairs';
        return item;
      }
      case 'pendingPair': {
        const c = node.contradiction;
        const item = new vscode.TreeItem(pendingLabel(c), vscode.TreeItemCollapsibleState.None);
        item.description = 'waiting for a judge';
        item.tooltip = pendingTooltip(c);
        item.iconPath = new vscode.ThemeIcon('circle-outline');
        item.contextValue = 'pendingPair';
        item.id = `pending:${c.id}`;
        if (c.b) {
          item.command = {
            command: COMMANDS.openMemory.id,
            title: 'Open Memory',
            arguments: [{ id: c.b.id, folder: node.folder }],
          };
        }
        return item;
      }
      case 'reviews': {
        const item = new vscode.TreeItem(
          'Review for the Team',
          node.list.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
        );
        item.description = `${node.list.length} proposed`;
        item.tooltip = 'Memories learned from chats, agents and fixes: approved ones are written to the shared folder by Share';
        item.iconPath = new vscode.ThemeIcon('organization');
        item.contextValue = 'reviews';
        item.id = 'reviews';
        return item;
      }
      case 'review': {
        const r = node.item;
        const item = new vscode.TreeItem(reviewLabel(r), vscode.TreeItemCollapsibleState.None);
        item.description = reviewDescription(r);
        item.tooltip = reviewTooltip(r);
        item.iconPath = new vscode.ThemeIcon(kindIcon(r.kind));
        item.contextValue = 'proposedMemory';
        item.id = `review:${r.id}`;
        item.command = {
          command: COMMANDS.openMemory.id,
          title: 'Open Memory',
          arguments: [{ id: r.id, folder: node.folder }],
        };
        return item;
      }
      case 'stale': {
        const item = new vscode.TreeItem('Stale memories', vscode.TreeItemCollapsibleState.Collapsed);
        const gone = node.list.filter((m) => m.state === 'gone').length;
        item.description = `${gone} gone · ${node.list.length - gone} changed since`;
        item.tooltip = 'Memories whose cited files, symbols or dependencies changed or are gone';
        item.iconPath = new vscode.ThemeIcon('history');
        item.id = 'stale';
        return item;
      }
      case 'staleMemory': {
        const m = node.memory;
        const item = new vscode.TreeItem(m.label ?? m.compressed ?? `#${m.id}`, vscode.TreeItemCollapsibleState.None);
        item.description = m.state === 'gone' ? 'gone' : 'changed since';
        item.tooltip = `${m.kind} #${m.id}\n\n${m.notes.join('\n')}`;
        item.iconPath = new vscode.ThemeIcon(m.state === 'gone' ? 'trash' : 'diff');
        item.contextValue = 'memory';
        item.command = { command: COMMANDS.openMemory.id, title: 'Open Memory', arguments: [{ id: m.id, folder: node.folder }] };
        return item;
      }
      case 'message':
        return new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
    }
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
