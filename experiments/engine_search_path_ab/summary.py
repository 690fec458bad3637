import json, numpy as np, os
def gm(x): x=np.asarray(x,float); return float(np.exp(np.mean(np.log(x))))
ref22=json.load(open('experiments/engine_pair_s22/after.json'))['cpp-brkga-10000']
cpp=None
if os.path.exists('experiments/engine_search_path_ab/cpp.json'):
    cpp=json.load(open('experiments/engine_search_path_ab/cpp.json'))['cpp-brkga-10000']
for side in ('before','after'):
    f=f'experiments/engine_search_path_ab/{side}.json'
    if not os.path.exists(f): continue
    r=json.load(open(f))['default']
    bp=r['by_program']
    progs={k:bp.get(k,0) for k in ('_loop_chunk','_many_chunk','init','_forward')}
    c=np.asarray(r['costs'])
    line=f"{side}: cold {r['total_s']:.1f} s (import {r['import_s']:.1f}), warm {r['warm_s']:.1f} s, programs {progs}, compiled(SEARCH_PROGRAMS) {r['programs_compiled']}, hits {r['cache_hits']}, cost/C++(s22 costs) {gm(c/np.asarray(ref22['costs'])):.4f}"
    if cpp: line+=f", cost/C++(this run) {gm(c/np.asarray(cpp['costs'])):.4f}, cold/C++ {r['total_s']/cpp['total_s']:.2f}x, warm/C++ {r['warm_s']/cpp['total_s']:.2f}x"
    print(line)
if cpp: print('cpp total', cpp['total_s'], 'same costs as s22:', cpp['costs']==ref22['costs'])
