// The Kubernetes verb of an HTTP request to the API server, read from its method and path as the API server's
// own request info does: get, list, watch, create, update, patch, delete, deletecollection; a lowercase method
// for paths outside the resource tree (discovery, /version).

/** The verb of a request to the API server (path with its query). */
export function kubeVerb(method: string, path: string): string {
  const [p, query = ''] = path.split('?', 2);
  const m = method.toUpperCase();
  const segs = p.split('/').filter((s) => s !== '');
  let rest: string[] | undefined;
  if (segs[0] === 'api') rest = segs.slice(2);
  else if (segs[0] === 'apis') rest = segs.slice(3);
  if (!rest || rest.length === 0) return m.toLowerCase();
  // namespaces/NS/RESOURCE...: a namespaced resource; namespaces and namespaces/NS alone are the namespaces.
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const collection = rest.length === 1;
  switch (m) {
    case 'GET': {
      const watch = new URLSearchParams(query).get('watch');
      if (watch === 'true' || watch === '1') return 'watch';
      return collection ? 'list' : 'get';
    }
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return collection ? 'deletecollection' : 'delete';
    default:
      return m.toLowerCase();
  }
}
