#!/usr/bin/env node
// Derives, from a checkout of the published OCSF schema (github ocsf/ocsf-schema),
// what an event of each class lockaudit emits must carry: the class's attributes
// with their requirement (base event + category + class, inheritance resolved,
// profiles left out: lockaudit declares none), the class/category uids and
// activity enum, and for every object reachable from those attributes its
// attributes, requirements and constraints. Output: the test data of
// test/unit/ocsf.test.ts.
//   node scripts/ocsfRequired.mjs <ocsf-schema git dir> <commit> > test/unit/fixtures/ocsf-required-<version>.json
import { execFileSync } from 'node:child_process';

const [gitDir, commit] = process.argv.slice(2);
if (!gitDir || !commit) {
  console.error('usage: node scripts/ocsfRequired.mjs <ocsf-schema git dir> <commit>');
  process.exit(2);
}
/** The classes lockaudit maps its alert kinds to (exporters/alerts/formats.ts). */
const CLASSES = [
  'application/api_activity',
  'application/datastore_activity',
  'iam/entity_management',
  'system/event_log_activity',
  'findings/compliance_finding',
];

const show = (file) => JSON.parse(execFileSync('git', ['--git-dir', gitDir, 'show', `${commit}:${file}`], { encoding: 'utf8', maxBuffer: 64 << 20 }));
const version = show('version.json').version;
const dictionary = show('dictionary.json');
const categories = show('categories.json').attributes;

/** Attributes of a definition, its own $include files that are not profiles merged in (a profile applies only when declared). */
function ownAttributes(def) {
  const out = {};
  for (const [k, v] of Object.entries(def.attributes ?? {})) {
    if (k === '$include') {
      for (const inc of [v].flat()) if (!String(inc).startsWith('profiles/')) Object.assign(out, show(inc).attributes ?? {});
    } else out[k] = v;
  }
  return out;
}

function mergeAttrs(parent, child) {
  const out = { ...parent };
  // A child's enum adds to (or re-captions) its parent's: OCSF merges enums.
  for (const [k, v] of Object.entries(child))
    out[k] = { ...(parent[k] ?? {}), ...v, ...(parent[k]?.enum || v.enum ? { enum: { ...(parent[k]?.enum ?? {}), ...(v.enum ?? {}) } } : {}) };
  return out;
}

/** An event class or object with its `extends` chain resolved. */
function resolve(file, dir) {
  const def = show(file);
  let attrs = ownAttributes(def);
  let constraints = def.constraints ?? {};
  if (def.extends) {
    const parent = resolve(`${dir}/${def.extends}.json`, dir);
    attrs = mergeAttrs(parent.attrs, attrs);
    constraints = { ...parent.constraints, ...constraints };
    def.category ??= parent.def.category;
  }
  return { def, attrs, constraints };
}

function resolveEvent(path) {
  const def = show(`events/${path}.json`);
  const chain = [def];
  let cur = def;
  let dir = path.split('/')[0];
  while (cur.extends) {
    const next = cur.extends === 'base_event' ? show('events/base_event.json') : show(`events/${dir}/${cur.extends}.json`);
    chain.unshift(next);
    cur = next;
  }
  let attrs = {};
  let constraints = {};
  for (const d of chain) {
    attrs = mergeAttrs(attrs, ownAttributes(d));
    constraints = { ...constraints, ...(d.constraints ?? {}) };
  }
  const category = chain
    .map((d) => d.category)
    .filter((c) => c && c !== 'other')
    .pop();
  return { def, attrs, constraints, category };
}

const types = {};
const objects = {};
const wanted = [];
function typeOf(attr, local) {
  const d = dictionary.attributes[attr] ?? {};
  return { type: local?.type ?? d.type, object: local?.object_type ?? d.object_type, isArray: Boolean(d.is_array) };
}
function note(attr, local) {
  const t = typeOf(attr, local);
  types[attr] ??= { type: t.type, ...(t.type === 'object_t' ? { object: t.object } : {}), ...(t.isArray ? { array: true } : {}) };
  const obj = t.type === 'object_t' ? t.object : dictionary.types.attributes[t.type] ? undefined : t.type;
  if (obj && !objects[obj] && !wanted.includes(obj)) wanted.push(obj);
}

/** name → requirement, or [requirement, enum ids] where the attribute is an enum (dictionary enums count too). */
function attributeTable(attrs) {
  return Object.fromEntries(
    Object.entries(attrs)
      .map(([k, v]) => {
        const r = v.requirement ?? 'optional';
        const e = v.enum ?? dictionary.attributes[k]?.enum;
        return [
          k,
          e && !['class_uid', 'category_uid', 'type_uid'].includes(k)
            ? [
                r,
                Object.keys(e)
                  .map(Number)
                  .sort((a, b) => a - b),
              ]
            : r,
        ];
      })
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
}

const classes = {};
for (const path of CLASSES) {
  const { def, attrs, constraints, category } = resolveEvent(path);
  const categoryUid = categories[category].uid;
  const activity = attrs.activity_id?.enum ?? {};
  classes[path.split('/')[1]] = {
    name: def.name,
    class_uid: categoryUid * 1000 + def.uid,
    class_name: def.caption,
    category_uid: categoryUid,
    category_name: categories[category].caption,
    activities: Object.fromEntries(Object.entries(activity).map(([id, e]) => [id, e.caption])),
    constraints,
    attributes: attributeTable(attrs),
  };
  for (const [k, v] of Object.entries(attrs)) note(k, v);
}
while (wanted.length > 0) {
  const name = wanted.shift();
  let r;
  try {
    r = resolve(`objects/${name}.json`, 'objects');
  } catch {
    continue; // a primitive type name, not an object
  }
  objects[name] = {
    constraints: r.constraints,
    attributes: attributeTable(r.attrs),
  };
  for (const [k, v] of Object.entries(r.attrs)) note(k, v);
}
// observable.type_id: the types, dictionary attributes and objects that declare an observable id.
const observableTypeIds = { 0: 'Unknown', 99: 'Other' };
for (const v of Object.values(dictionary.types.attributes)) if (v.observable !== undefined) observableTypeIds[v.observable] = v.caption;
for (const v of Object.values(dictionary.attributes)) if (v.observable !== undefined) observableTypeIds[v.observable] = v.caption;
for (const f of execFileSync('git', ['--git-dir', gitDir, 'ls-tree', '--name-only', commit, 'objects/'], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
  const o = show(f);
  if (o.observable !== undefined) observableTypeIds[o.observable] = o.caption;
}
// observable.type_id's enum is these ids (the object file lists only 0 and 99).
const obsTypeId = objects.observable?.attributes.type_id;
if (Array.isArray(obsTypeId))
  obsTypeId[1] = Object.keys(observableTypeIds)
    .map(Number)
    .sort((a, b) => a - b);
const primitive = Object.fromEntries(Object.entries(dictionary.types.attributes).map(([k, v]) => [k, v.type ?? k]));

const out = {
  source: 'https://github.com/ocsf/ocsf-schema',
  version,
  commit: execFileSync('git', ['--git-dir', gitDir, 'rev-parse', commit], { encoding: 'utf8' }).trim(),
  generatedBy: 'scripts/ocsfRequired.mjs',
  classes,
  objects,
  types,
  primitive,
  observableTypeIds,
};
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
