# The bodies of veil's POST /transform calls from inside PostgreSQL, and how their answers map
# back to the values sent.
#
# `veil db install` embeds this file before veil_client.py in one module. An item is (class,
# property, value, subject); subject is the data subject the value belongs to (keys scoped to the
# subject, issue 29) or None. veil names a subject per processing context (a Subject evidence
# beside the Action), so a call carries one processing context and one request per subject,
# in the order the subjects first occur; values without a subject share one request without a
# Subject evidence. Answers and errors name a request and an instance in it: here they become
# the item's position again.
import json

RIGHTS_GUID = '00000000-0000-4000-8000-00000000a001'
# the processing context and the request of group g: these bases plus g
PROCESSING_BASE = 0xa0020000
REQUEST_BASE = 0xa0030000

# veil's default service.limits.requests: a call holds at most this many subjects
MAX_REQUESTS = 100


def group_guid(base, g):
    return '00000000-0000-4000-8000-%012x' % (base + g)


def request_groups(chunk):
    """[(subject, [position in chunk])], one per subject in the order they first occur."""
    groups = []
    at = {}
    for k, item in enumerate(chunk):
        g = at.get(item[3])
        if g is None:
            g = at[item[3]] = len(groups)
            groups.append((item[3], []))
        groups[g][1].append(k)
    return groups


def request_body(action, role, chunk, groups):
    """The JSON body (bytes) of one call for the chunk's items, grouped by subject."""
    contexts = []
    requests = []
    for g, (subject, positions) in enumerate(groups):
        evidences = [{'name': 'Action', 'value': action}]
        if subject is not None:
            evidences.append({'name': 'Subject', 'value': subject})
        contexts.append({'guid': group_guid(PROCESSING_BASE, g), 'evidences': evidences})
        requests.append({'guid': group_guid(REQUEST_BASE, g), 'rightsContext': RIGHTS_GUID,
                         'processingContext': group_guid(PROCESSING_BASE, g),
                         'instances': [{'className': chunk[k][0], 'propertyName': chunk[k][1], 'value': chunk[k][2]} for k in positions]})
    return json.dumps({
        'rightsContexts': [{'guid': RIGHTS_GUID, 'evidences': [{'name': 'Role', 'value': role}]}],
        'processingContexts': contexts,
        'requests': requests,
    }, ensure_ascii=False, separators=(',', ':')).encode('utf-8')


def response_values(data, groups, n):
    """The values of a 200 answer in the chunk's order; None when it is not a transform response
    for exactly these requests and instances."""
    try:
        responses = json.loads(data)['responses']
        if len(responses) != len(groups):
            return None
        out = [None] * n
        for g, (_subject, positions) in enumerate(groups):
            response = responses[g]
            instances = response['instances']
            if response['request'] != group_guid(REQUEST_BASE, g) or len(instances) != len(positions):
                return None
            for k, instance in zip(positions, instances):
                out[k] = instance['value']
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if not all(isinstance(v, str) for v in out):
        return None
    return out


def error_positions(errors, groups):
    """[(position in chunk, code)] of a problem's errors that name a request and an instance of this call."""
    by_guid = dict((group_guid(REQUEST_BASE, g), positions) for g, (_s, positions) in enumerate(groups))
    out = []
    for e in errors:
        if not isinstance(e, dict):
            continue
        positions = by_guid.get(e.get('request'))
        index = e.get('instance')
        code = e.get('code')
        if positions is not None and isinstance(index, int) and 0 <= index < len(positions) and isinstance(code, str):
            out.append((positions[index], code[:64]))
    return out
