// The drawer's rollouts as they come from the server: each loaded once into a small cache (a bundle
// of its header, /paths, /graph and /exchanges), what a tab needs fetched into its bundle when that
// tab is shown (the Forks tab's pair, the Timeline's first part, the Chat's path), the next part of a
// big answer, a message a part left out, and a poll's "has the record changed". It draws nothing.

import {get, trajectoryPath} from "./api.js";
import {fetchNext, partOf} from "./fetch-part.js";
import {forkPair} from "../draw/tab-forks.js";

const CACHE_SIZE = 8;

/** The path the Path and Chat tabs show: the one asked for, or the last there is (-1 for none). */
export function pathShown(bundle, state) {
  return Math.min(state.path, (bundle.paths?.paths || []).length - 1);
}

/** What a poll compares: a record rewritten, grown or finished says so in its header. */
const signature = (t) => JSON.stringify([t.revision, t.status, t.capture?.node_count, t.capture?.exchange_count]);

export class RolloutLoader {
  constructor() {
    this.cache = new Map();  // "run|id" -> bundle
    this.loading = new Map();  // "run|id" -> the load under way
    this.fetching = false;  // a next part under way: one at a time
  }

  bundle(run, id) {
    return this.cache.get(`${run}|${id}`);
  }

  /** Load a rollout into the cache; a load of the same rollout still under way is waited for, not
   *  started again (a poll during a slow first load of a huge record would double the server's work). */
  load(run, id) {
    const key = `${run}|${id}`;
    if (!this.loading.has(key)) {
      this.loading.set(key, this.fetchBundle(run, id, key).finally(() => this.loading.delete(key)));
    }
    return this.loading.get(key);
  }

  async fetchBundle(run, id, key) {
    const base = trajectoryPath(id);
    const params = {run_id: run};
    const trajectory = await get(base, params);
    let bundle = {trajectory};
    if (!trajectory.unreadable) {
      const [paths, graph, exchanges] = await Promise.all([
        get(`${base}/paths`, params), get(`${base}/graph`, params), get(`${base}/exchanges`, params)]);
      bundle = {trajectory, paths, graph, exchanges, forks: new Map()};  // forks: "a|b" -> /forks answer
    }
    this.cache.delete(key);
    this.cache.set(key, bundle);
    while (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value);
  }

  /** What the tab `state` shows needs beyond the bundle, fetched once into it (an error kept as the
   *  answer, said in the tab). */
  async loadTab(state) {
    const bundle = this.bundle(state.run, state.traj);
    if (!bundle || bundle.trajectory.unreadable) return;
    const base = trajectoryPath(state.traj);
    const answer = (route, params) => get(`${base}/${route}`, {...params, run_id: state.run})
      .catch((error) => ({error: error.message}));
    if (state.tab === "forks") {
      const pair = forkPair(bundle.paths, state);
      if (pair && pair.a !== pair.b && !bundle.forks.has(pair.key)) {
        bundle.forks.set(pair.key, await answer("forks", {a: pair.a, b: pair.b}));
      }
    } else if (state.tab === "timeline" && !bundle.timeline) {
      bundle.timeline = await answer("timeline", {});
    } else if (state.tab === "chat") {
      const index = pathShown(bundle, state);
      bundle.chat ||= new Map();  // path index -> its /chat answer, parts merged in
      if (index >= 0 && !bundle.chat.has(index)) bundle.chat.set(index, await answer(`paths/${index}/chat`, {}));
    }
  }

  /** A message a /chat part left out for its size, fetched whole (`/message?node=`) into its card; an
   *  error is said on the card ("load it" asks again). */
  async loadMessage(state, card) {
    try {
      const got = await get(`${trajectoryPath(state.traj)}/message`, {run_id: state.run, node: card.node_id});
      card.message = got.message;
      delete card.loadError;
    } catch (error) {
      card.loadError = error.message;
    }
  }

  /** Fetch the next part of `bundle`'s `route` answer (path `index`'s of /paths), and the parts after
   *  it while `wanted()` says what is sought is still not there; false when nothing was fetched (one
   *  under way already, or a failure: the "more" row stays, a click asks again). */
  async more(state, bundle, route, index, wanted) {
    if (!bundle?.[route] || this.fetching) return false;
    this.fetching = true;
    try {
      do {
        await fetchNext(trajectoryPath(state.traj), {run_id: state.run}, route, bundle[route], index);
      } while (partOf(route, bundle[route], index)?.next !== undefined && wanted());
    } catch {
      return false;
    } finally {
      this.fetching = false;
    }
    return true;
  }

  /** A poll of the open rollout: "gone" (404), "same", "changed" (reloaded, and its tab's data), or
   *  null (an ask failed otherwise: try again next poll). */
  async refresh(state) {
    const old = this.bundle(state.run, state.traj)?.trajectory;
    let fresh;
    try {
      fresh = await get(trajectoryPath(state.traj), {run_id: state.run});
    } catch (error) {
      return error.status === 404 ? "gone" : null;
    }
    if (old && signature(fresh) === signature(old)) return "same";
    try {
      await this.load(state.run, state.traj);
    } catch {
      return null;  // e.g. rewritten while read
    }
    await this.loadTab(state);
    return "changed";
  }
}
