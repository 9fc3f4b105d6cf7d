// Response shapes of the public API, taken from ./apiSchema.ts — generated
// from the OpenAPI document the API serves (npm run gen:ui-types), never
// copied by hand — and named for the pages that read them.
import type { paths } from './apiSchema.js';

type JsonOf<R> = R extends { content: { 'application/json': infer T } } ? T : never;
/** The JSON body of a route's success answer. */
type Answer<P extends keyof paths, M extends 'get' | 'post' = 'get'> = paths[P][M] extends { responses: infer R }
  ? R extends { 200: infer A }
    ? JsonOf<A>
    : R extends { 201: infer A }
      ? JsonOf<A>
      : never
  : never;

export type GrantPage = Answer<'/v1/grants'>;
export type Grant = GrantPage['items'][number];
export type Contention = Answer<'/v1/reports/contention'>;
export type ContentionGroup = Contention['groups'][number];
export type HotKey = Contention['hottestKeys'][number];
export type Register = Answer<'/v1/reports/risk-register'>;
export type RegisterRow = Register['classes'][number];
export type UnprotectedReport = Answer<'/v1/reports/unprotected'>;
export type UnprotectedItem = UnprotectedReport['items'][number];
export type Reconciliation = NonNullable<UnprotectedItem['reconciliation']>;
export type Tailer = Answer<'/v1/tailers'>['items'][number];
export type Gap = Answer<'/v1/gaps'>['items'][number];
export type Timeline = Answer<'/v1/reports/timeline'>;
export type TimelineCell = Timeline['cells'][number];
export type TimelineGap = Timeline['gaps'][number];
export type QuarantinePage = Answer<'/v1/quarantine'>;
export type QuarantineItem = QuarantinePage['items'][number];
export type TailerLag = Answer<'/v1/tailers/lag'>;
export type LagPoint = TailerLag['clusters'][number]['series'][number];
export type Whoami = Answer<'/v1/whoami'>;
export type Role = Whoami['roles'][number];
/** How a grant ended, as the API lists it. */
export type EndKind = NonNullable<Grant['endKind']>;
export type KeyspaceState = Answer<'/v1/state'>;
export type HeldLock = KeyspaceState['holds'][number];
export type UnknownKey = KeyspaceState['unknown'][number];
export type GapRef = KeyspaceState['gaps'][number];
export type Moment = KeyspaceState['at'];
export type KeyspaceDiff = Answer<'/v1/diff'>;
