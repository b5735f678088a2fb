// Validates Kubernetes objects against the API's JSON schemas, offline,
// with kubernetes-models (core and apps objects) and
// @kubernetes-models/prometheus-operator (ServiceMonitor, PrometheusRule).
// Reads a JSON array of objects on stdin (tests render the manifests with
// `kubectl kustomize` and convert); prints one line per object,
// "ok <kind>/<name>" or "invalid <kind>/<name>: <message>"; exits 0 when
// every object is valid, 1 when one is not or has a kind we have no schema
// for, 2 on bad input.
//
//   kubectl kustomize deploy/k8s | python3 -c 'import sys,yaml,json; ...' | node tests/k8s_validate.mjs
//
// Install first: (cd tests && npm ci --ignore-scripts).

async function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const path = group === 'monitoring.coreos.com'
    ? `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`
    : `kubernetes-models/${group ? `${group}/` : ''}${version}/${kind}`;
  const mod = await import(path);
  return mod[kind] ?? mod.default;
}

async function main() {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  let objects;
  try {
    objects = JSON.parse(text);
  } catch (e) {
    console.error(`not JSON: ${e.message}`);
    return 2;
  }
  if (!Array.isArray(objects)) {
    console.error('expected a JSON array of objects');
    return 2;
  }
  let bad = 0;
  for (const o of objects) {
    const id = `${o?.kind}/${o?.metadata?.name}`;
    let Model;
    try {
      Model = await modelFor(o.apiVersion, o.kind);
    } catch (e) {
      console.log(`invalid ${id}: no schema for ${o?.apiVersion} ${o?.kind}`);
      bad++;
      continue;
    }
    try {
      new Model(o).validate();
      console.log(`ok ${id}`);
    } catch (e) {
      console.log(`invalid ${id}: ${String(e.message).replace(/\s+/g, ' ')}`);
      bad++;
    }
  }
  return bad ? 1 : 0;
}

process.exitCode = await main();
