#!/usr/bin/env python3
"""A deterministic multilingual prompt corpus for the text path (prompt cleaning and tokenization).

    from text_corpus import corpus          # list of (category, text), always the same
    python text_corpus.py > corpus.jsonl     # one {"category": ..., "text": ...} per line, ASCII JSON

Texts in the styles users and prompt-extension models write: long English scene descriptions with typographic
punctuation, Chinese, Japanese (half-width katakana too), Korean, Cyrillic, Arabic, Devanagari and other scripts,
emoji sequences, combining marks, full-width forms and ligatures, HTML entities, mojibake, control characters and
terminal escapes, odd whitespace, special-token strings, characters outside the vocabulary, texts past 512
tokens, and the default negative prompts. Every text is in exactly one category (later duplicates are dropped).
No network, no randomness but a fixed-seed random.Random; `training_sentences()` gives other sentences of the
same generators (another seed) to train a small SentencePiece model on (umt5_vocab.sh).
"""
import json
import os
import random
import re
import sys
import unicodedata

SEED = 20261202

# ----------------------------------------------------------------------------------------------------------------
# English, in the style of prompt-extension models (Wan's prompt extender, GPT rewrites).
EN_SUBJECTS = [
    "a young woman with auburn hair", "an elderly fisherman in a yellow raincoat", "a golden retriever puppy",
    "a lone astronaut", "two children in school uniforms", "a street musician with a battered violin",
    "a red fox", "a samurai in lacquered armor", "a barista with tattooed forearms", "a ballerina in a white tutu",
    "the girl’s grandmother", "a tabby cat", "a cyclist in a neon jacket", "a chef with a tall toque",
    "a humpback whale", "a teenage skateboarder", "a knight on a grey horse", "a robot vacuum",
    "a woman in a flowing crimson dress", "a man’s weathered hands", "a hummingbird", "a jazz trio",
]
EN_PLACES = [
    "in “Café Noir”, a dimly lit Parisian bistro", "on a rain-soaked Tokyo street at night",
    "across a sunflower field in late August", "inside a cluttered Victorian study",
    "on the deck of a fishing boat in the North Sea", "beneath the cherry blossoms of Kyoto",
    "in a neon-drenched cyberpunk alley", "on a windswept Icelandic beach of black sand",
    "in a sunlit kitchen with terracotta tiles", "at the edge of a misty pine forest",
    "in the ‘Blue Hour’ over Manhattan’s skyline", "inside a crowded Moroccan souk",
    "on a frozen lake under the aurora borealis", "in a 1950s American diner", "on the surface of Mars",
]
EN_ACTIONS = [
    "slowly turns toward the camera", "pours steaming coffee into a chipped mug", "runs through the snow",
    "dances alone as the music swells", "reads a letter, lips trembling", "laughs and throws her head back",
    "steps carefully across wet stones", "adjusts the focus of an old camera", "releases a paper lantern",
    "glances over his shoulder", "leaps between rooftops", "kneels to tie a shoelace", "waves goodbye",
]
EN_LIGHT = [
    "warm tungsten light spills across the table", "soft golden-hour backlight rims every strand of hair",
    "cold blue moonlight filters through the blinds", "harsh midday sun casts crisp shadows",
    "flickering candlelight dances on the walls", "volumetric fog catches the beams of streetlights",
    "overcast skies give a soft, even, diffused light",
]
EN_CAMERA = [
    "The camera slowly pushes in", "A handheld tracking shot follows", "Shot on 35 mm film with shallow depth of field",
    "The lens racks focus from foreground to background", "A sweeping aerial drone shot reveals the scene",
    "Static wide shot, 24 fps", "Low-angle close-up", "Slow motion at 120 fps", "A dolly zoom heightens the tension",
]
EN_STYLE = [
    "cinematic, photorealistic, 8K", "in the style of a Wes Anderson film", "Studio Ghibli–inspired watercolor look",
    "film grain, Kodak Portra 400 colors", "hyper-detailed, ultra-realistic textures", "moody, noir, high contrast",
    "pastel palette, dreamy atmosphere", "documentary realism",
]
EN_QUOTES = ["“I’ll be right back,”", "‘Not yet…’", "“Don’t look down!”", "“C’est la vie,”", "‘Wait—listen.’"]
EU_SENTENCES = [
    "Une jeune femme traverse le café, l’air rêveur — la caméra la suit lentement.",
    "Ein älterer Mann geht durch die verschneite Straße; die Laternen flackern über dem Kopfsteinpflaster.",
    "Una niña corre por la playa al atardecer, ¡con una cometa roja en la mano!",
    "Um gato laranja dorme na janela enquanto a chuva cai lá fora.",
    "Un vecchio pescatore ripara la rete sul molo, al tramonto dorato di Positano.",
    "Een fietser rijdt langs de grachten van Amsterdam in de ochtendmist.",
    "Młoda kobieta w czerwonym płaszczu idzie przez zaśnieżony park w Krakowie.",
    "Bir kedi İstanbul’un dar sokaklarında güneşleniyor; arka planda martılar uçuşuyor.",
    "Một cô gái mặc áo dài trắng đạp xe qua phố cổ Hội An dưới ánh đèn lồng.",
    "Ο ψαράς επιστρέφει στο λιμάνι της Σαντορίνης καθώς δύει ο ήλιος.",
    "Æbler og pærer ligger på bordet; øjnene følger den gamle kvinde i København.",
    "Žena v modrých šatech tančí na Karlově mostě za úsvitu.",
    "Hajnalban egy öreg halász evez át a Balaton tükörsima vizén.",
    "Þórður gengur yfir jökulinn í þoku — myndavélin fylgir honum.",
    "Straße, Maße, groß — ß und ẞ in einem Satz über die Ostsee.",
    "Le chœur chante « Noël » dans la cathédrale ; l’œuvre est éclairée à la bougie.",
]

# Chinese.
ZH_SUBJECTS = ["一位身穿红色旗袍的年轻女子", "一只橘色的小猫", "一位白发苍苍的老渔夫", "两个穿着校服的孩子", "一只雪白的狐狸",
               "一位身披铠甲的武士", "一名街头小提琴手", "一只金毛幼犬", "一位宇航员", "一群白鹭", "一位穿汉服的少女"]
ZH_PLACES = ["在雨夜的上海外滩", "在开满樱花的京都小巷里", "在金色的麦田中", "在烟雾缭绕的山间茶园", "在霓虹闪烁的香港街头",
             "在冰封的湖面上", "在古老的江南水乡", "在沙漠中的绿洲旁", "在繁忙的火车站台上", "在月光下的长城上"]
ZH_ACTIONS = ["缓缓转身望向镜头", "在雪地里奔跑", "轻轻拨动琴弦", "撑着油纸伞慢慢走过石桥", "翩翩起舞", "低头阅读一封旧信",
              "放飞一盏孔明灯", "向远方挥手告别", "在窗边安静地喝茶", "跃过屋顶"]
ZH_STYLE = ["电影质感", "超高清4K画质", "柔和的逆光", "浅景深", "胶片颗粒感", "水墨画风格", "赛博朋克风格", "暖色调",
            "“慢动作”", "「特写镜头」", "《千里江山图》般的色彩", "航拍视角", "低角度仰拍", "手持跟拍"]
ZH_PUNCT_END = ["。", "！", "？", "……", "。", "~"]

# Japanese.
JA_SENTENCES = [
    "桜の花びらが舞う中、着物姿の女性がゆっくりと振り返る。", "雨の新宿の路地裏を、一匹の黒猫が歩いていく。",
    "夕暮れの海辺で、少年が赤い凧を揚げている。", "古い喫茶店のカウンターで、マスターがコーヒーを淹れる。",
    "雪に覆われた温泉街を、湯気が静かに立ち上る。", "ネオンが光る秋葉原の夜、ロボットが踊っている。",
    "富士山を背景に、新幹線が高速で通り過ぎる。", "おばあちゃんが縁側でお茶を飲みながら微笑む。",
    "カメラがゆっくりとズームインし、キャラクターの表情を捉える。", "スローモーションで水しぶきが飛び散る。",
    "「ありがとう」と彼女は小さな声で言った。", "『千と千尋の神隠し』のような幻想的な雰囲気。",
]
JA_HALFWIDTH = ["ｶﾒﾗ", "ｽﾛｰﾓｰｼｮﾝ", "ｻｸﾗ", "ﾊﾟﾝｹｰｷ", "ｶﾞｰﾃﾞﾝ", "ｺｰﾋｰ", "ﾃﾞｼﾞﾀﾙ", "ｱﾆﾒ", "ﾈｵﾝ", "ﾛﾎﾞｯﾄ", "ｷｬﾗｸﾀｰ"]
JA_HALF_PUNCT = ["｡", "､", "｢", "｣", "･"]

# Korean.
KO_SENTENCES = [
    "비 오는 서울의 밤거리를 한 여자가 우산을 쓰고 걸어간다.", "벚꽃이 흩날리는 공원에서 아이들이 뛰어논다.",
    "할머니가 부엌에서 김치찌개를 끓이고 있다.", "카메라가 천천히 다가가며 그의 얼굴을 클로즈업한다.",
    "한옥 마을의 지붕 위로 눈이 소복이 쌓인다.", "네온사인이 빛나는 홍대 거리에서 버스커가 노래한다.",
    "바닷가에서 강아지가 파도를 쫓아 달린다.", "슬로 모션으로 물방울이 튀어 오른다.", "“괜찮아”라고 그녀가 속삭였다.",
    "시네마틱한 조명, 4K 초고화질, 얕은 심도.",
]

# Cyrillic.
RU_SENTENCES = [
    "Молодая женщина в красном пальто идёт по заснеженной Красной площади.", "Старый рыбак чинит сети на берегу Байкала.",
    "Камера медленно приближается к лицу девочки — её глаза блестят от слёз.", "Рыжий кот спит на подоконнике, за окном идёт дождь.",
    "Ночная Москва: огни, машины, отражения в лужах…", "«Замедленная съёмка», кинематографичный свет, 8K.",
    "Щенок бежит по полю подсолнухов в лучах заката.", "Їжак іде через осінній ліс у Карпатах.",
    "Ђак чита књигу у старој библиотеци у Београду.", "Ёлка, ёж и йогурт — буквы ё и й.",
    "Балерина танцует на сцене Большого театра под музыку Чайковского.",
]

# Arabic script.
AR_SENTENCES = [
    "امرأة شابة تمشي في شوارع القاهرة القديمة عند غروب الشمس.", "قطة صغيرة تنام على حافة النافذة بينما يهطل المطر.",
    "الكاميرا تقترب ببطء من وجه الرجل العجوز.", "صيادٌ يُصلِحُ شِباكَهُ على شاطئِ البحرِ.", "مدينة دبي ليلاً، أضواء ونجوم…",
    "طفل يركض في حقل من عباد الشمس، حركة بطيئة، جودة ٤K.", "الســـلام عليكم — تطويل الحروف.",
    "یک دختر جوان در خیابان‌های تهران قدم می‌زند.", "ایک بوڑھا آدمی لاہور کے بازار میں چائے پی رہا ہے۔",
    "«لقطة سينمائية» بإضاءة دافئة، عمق ميدان ضحل.", "الأرقام: ٠١٢٣٤٥٦٧٨٩ و ۰۱۲۳۴۵۶۷۸۹.", "ﻻ ﷲ ﷺ أشكال العرض.",
]

# Devanagari (and other Indic).
HI_SENTENCES = [
    "एक युवा महिला बारिश में मुंबई की सड़कों पर चल रही है।", "एक बूढ़ा मछुआरा गंगा के किनारे अपना जाल ठीक कर रहा है।",
    "कैमरा धीरे-धीरे बच्चे के चेहरे की ओर बढ़ता है।", "सूर्यास्त के समय ताजमहल के सामने मोर नाच रहा है।",
    "धीमी गति में पानी की बूँदें उछलती हैं, सिनेमाई रोशनी, ४K गुणवत्ता।", "क्षत्रिय, ज्ञान, श्री, द्वार — संयुक्ताक्षर।",
    "ज़िंदगी, फ़िल्म, क़लम — नुक़्ता वाले अक्षर।", "मराठी: एक मांजर खिडकीत झोपली आहे.", "नेपाली: हिमालयको काखमा एउटा सानो गाउँ छ।",
    "संस्कृतम्: धर्मक्षेत्रे कुरुक्षेत्रे समवेता युयुत्सवः॥", "अंक: ०१२३४५६७८९",
]
OTHER_SCRIPT_SENTENCES = [
    "หญิงสาวเดินอยู่บนถนนในกรุงเทพฯ ตอนพระอาทิตย์ตก", "אישה צעירה הולכת ברחובות ירושלים בשקיעה.",
    "Ένα κορίτσι τρέχει στην παραλία με έναν κόκκινο χαρταετό.", "ახალგაზრდა ქალი თბილისის ქუჩებში სეირნობს.",
    "Մի երիտասարդ կին քայլում է Երևանի փողոցներով։", "ஒரு இளம் பெண் சென்னை தெருக்களில் நடக்கிறாள்.",
    "একটি ছোট মেয়ে কলকাতার রাস্তায় দৌড়াচ্ছে।", "ஒளிப்பதிவு மெதுவாக நகர்கிறது.", "ᐃᓄᒃᑎᑒᑦ ᐅᖃᐅᓯᖅ",
    "አንዲት ወጣት ሴት በአዲስ አበባ ጎዳናዎች ላይ ትሄዳለች።", "ယောက်ျားလေးတစ်ယောက် ရန်ကုန်မြို့တွင် လမ်းလျှောက်နေသည်။",
    "ក្មេងស្រីម្នាក់ដើរលើផ្លូវក្នុងទីក្រុងភ្នំពេញ។", "ꦲꦤꦕꦫꦏ", "Ελληνικά: ά έ ή ί ό ύ ώ ΐ ΰ ς",
]

EMOJI_BASE = ["🔥", "🌸", "🎬", "📸", "🌊", "🐱", "🐶", "🦊", "🌙", "⭐", "✨", "🎥", "🍜", "☕", "🚀", "🌈", "❄️", "☀️",
              "❤️", "❤", "✔️", "☺️", "⚡", "🏔️", "🎞️", "👀", "💃", "🕺", "🤖", "🧙‍♂️", "🧜‍♀️", "🙂", "😂", "🥲", "🫠"]
EMOJI_PEOPLE = ["👍", "👋", "🙌", "👩", "👨", "🧑", "👶", "💪", "🤝", "🏃‍♀️", "🏊", "🤷‍♂️", "🙋‍♀️", "👩‍🍳", "🧑‍🚀"]
SKIN_TONES = ["\U0001F3FB", "\U0001F3FC", "\U0001F3FD", "\U0001F3FE", "\U0001F3FF"]
ZWJ_SEQUENCES = ["👨‍👩‍👧‍👦", "👩‍❤️‍👨", "👩‍💻", "🏳️‍🌈", "🏳️‍⚧️", "🐕‍🦺", "😶‍🌫️", "❤️‍🔥", "🧑🏽‍🤝‍🧑🏻", "👁️‍🗨️", "🐻‍❄️",
                 "👩🏾‍🦱", "🫱🏼‍🫲🏿"]
FLAGS = ["🇯🇵", "🇺🇸", "🇨🇳", "🇰🇷", "🇫🇷", "🇧🇷", "🇮🇳", "🇺🇦", "🇪🇺", "🇺🇳",
         "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",  # Scotland (tag sequence)
         "\U0001F3F4\U000E0067\U000E0062\U000E0077\U000E006C\U000E0073\U000E007F"]  # Wales
KEYCAPS = ["1️⃣", "2️⃣", "#️⃣", "*️⃣", "🔟", "0\u20e3"]

COMBINING = [chr(c) for c in range(0x300, 0x370)]
HTML_NAMED = ["&amp;", "&quot;", "&eacute;", "&hellip;", "&check;", "&nbsp;", "&lt;", "&gt;", "&copy;", "&mdash;",
              "&ndash;", "&rsquo;", "&lsquo;", "&ldquo;", "&rdquo;", "&apos;", "&euro;", "&times;", "&hearts;",
              "&auml;", "&Ouml;", "&szlig;", "&ccedil;", "&ntilde;", "&deg;", "&frac12;", "&trade;", "&reg;",
              "&larr;", "&rarr;", "&alpha;", "&Omega;", "&AMP;", "&thinsp;", "&ensp;", "&zwnj;", "&shy;", "&bull;"]
HTML_NUMERIC = ["&#8217;", "&#x2019;", "&#8220;", "&#x201D;", "&#233;", "&#xE9;", "&#X00E9;", "&#38;", "&#x26;",
                "&#128512;", "&#x1F600;", "&#20013;&#25991;", "&#160;", "&#10;", "&#9;", "&#128;", "&#150;", "&#0;",
                "&#x110000;", "&#xD800;", "&#65", "&#x41", "&#1114111;", "&#x7F;", "&#13;"]
HTML_ODD = ["AT&T", "Q&A", "&copy 2024", "&eacute x", "&notit;", "&amp", "&ampx", "&amp;amp;", "&amp;quot;",
            "&amp;#8217;", "&amp;eacute;", "&amp;amp;amp;", "& nbsp;", "&unknownentity;", "&#;", "&#x;", "&;",
            "&lt;/s&gt;", "&lt;pad&gt;", "&lt;extra_id_0&gt;", "&ltb&gt", "&Eacute;&EACUTE;", "&eacuteacute;"]

CONTROLS = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x0e", "\x1a", "\x1b", "\x1c", "\x1d", "\x1e", "\x1f",
            "\x7f", "\x80", "\x81", "\x85", "\x8d", "\x90", "\x9b", "\x9d", "\x9f", "\ufeff", "\u200b", "\u200c",
            "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069", "\u00ad", "\u2060", "\u180e",
            "\ufff9", "\ufffc", "\ufffd", "\u034f", "\ufe0f", "\ufe0e"]
TERMINAL = ["\x1b[31m", "\x1b[0m", "\x1b[1;32m", "\x1b[38;5;208m", "\x1b[48;2;10;20;30m", "\x1b[2J", "\x1b[H",
            "\x1b[K", "\x1b[?25l", "\x1b]0;title\x07", "\x1b]8;;https://example.com\x1b\\", "\x1b(B", "\x1bc",
            "\x9b31m", "\x1b[4m"]
WHITESPACE = ["\r\n", "\r", "\n", "\t", "  ", "    ", "\u00a0", "\u3000", "\u2002", "\u2003", "\u2009", "\u200a",
              "\u202f", "\u205f", "\u2028", "\u2029", "\u0085", "\u1680", "\x0b", "\x0c", "\t\t", "\n\n\n", " \r\n "]

SPECIAL = ["<extra_id_0>", "<extra_id_1>", "<extra_id_5>", "<extra_id_99>", "<extra_id_100>", "<extra_id_299>",
           "<extra_id_300>", "<extra_id_-1>", "<extra_id_01>", "<EXTRA_ID_0>", "</s>", "<s>", "<pad>", "<unk>",
           "<PAD>", "< /s>", "</s >", "<\\s>", "<mask>", "[MASK]", "<|endoftext|>", "<extra_id_>", "<extra_id_0",
           "extra_id_0>", "＜／ｓ＞", "＜ｐａｄ＞", "<extra_id_０>", "▁", "▁▁", "⁇", "[eod]", "<0x41>"]

RARE = ["𠀋", "𪚥", "𰻞", "𰻝", "𠮷", "𡈽", "𩸽", "𤭢", "𠀀", "\U0002A6D6", "\U00030000", "\U00031350", "㐀", "䶵",
        "鿿", "\u9fef", "\uf900", "\U0002F800", "𝐀𝐁𝐂", "𝕬𝖑𝖕𝖍𝖆", "𝓈𝒸𝓇𝒾𝓅𝓉", "𓀀𓁐𓃰", "𐎀𐎁", "𐌰𐌱𐌲", "ᚠᚢᚦ",
        "\ue000", "\uf8ff", "\U000F0000", "\U0010FFFD", "\u0378", "\U000E0001", "⿰氵每", "〠", "〄", "🀄", "🂡",
        "\u2e80", "\u31c0", "ꙮ", "\U0001D11E", "ℵ", "∰", "⏏", "␀", "\U0001FBF5", "🯰"]

# Negative prompts: Wan2.2's default (wan/configs/shared_config.py, Wan-Video/Wan2.2 @42bf4cf), its S2V default
# (wan/configs/wan_s2v_14B.py), diffusers' example (pipeline_wan.py EXAMPLE_DOC_STRING), and omni-generate's
# presets (configs/*.yaml, read below).
WAN22_NEG = ("色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，JPEG压缩残留，"
             "丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，手指融合，"
             "静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走")
WAN22_S2V_NEG = ("画面模糊，最差质量，画面模糊，细节模糊不清，情绪激动剧烈，手快速抖动，字幕，丑陋的，残缺的，多余的手指，"
                 "画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，手指融合，静止不动的画面，杂乱的背景，"
                 "三条腿，背景人很多，倒着走")
DIFFUSERS_NEG = ("Bright tones, overexposed, static, blurred details, subtitles, style, works, paintings, images, static, "
                 "overall gray, worst quality, low quality, JPEG compression residue, ugly, incomplete, extra fingers, "
                 "poorly drawn hands, poorly drawn faces, deformed, disfigured, misshapen limbs, fused fingers, still "
                 "picture, messy background, three legs, many people in the background, walking backwards")
WAN21_EN_NEG = ("Vivid colors, overexposure, static, blurry details, subtitles, stylized, artwork, painting, picture, "
                "still image, overall gray, worst quality, low quality, JPEG compression artifacts, ugly, incomplete, "
                "extra fingers, poorly drawn hands, poorly drawn face, deformed, disfigured, malformed limbs, fused "
                "fingers, static frame, cluttered background, three legs, many people in background, walking backwards")


def _preset_negative_prompts():
    """`negative-prompt:` of every omni-generate preset (configs/*.yaml of this checkout), sorted by file."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs")
    out = []
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            if name.endswith(".yaml"):
                with open(os.path.join(d, name), encoding="utf-8") as f:
                    for line in f:
                        m = re.match(r'negative-prompt:\s*("(?:[^"\\]|\\.)*")\s*$', line)
                        if m:
                            out.append(json.loads(m.group(1)))
    return out


# ----------------------------------------------------------------------------------------------------------------
def _en_scene(r, sentences=None):
    dash = r.choice(["—", " — ", "–", " - ", "--"])
    ell = r.choice(["…", "...", "…"])
    parts = []
    n = sentences or r.randint(2, 5)
    for i in range(n):
        s = r.choice([
            f"{r.choice(EN_SUBJECTS).capitalize()} {r.choice(EN_PLACES)} {r.choice(EN_ACTIONS)}.",
            f"{r.choice(EN_CAMERA)} as {r.choice(EN_SUBJECTS)} {r.choice(EN_ACTIONS)}{dash}{r.choice(EN_LIGHT)}.",
            f"{r.choice(EN_LIGHT).capitalize()}{ell} {r.choice(EN_QUOTES)} says {r.choice(EN_SUBJECTS)}.",
            f"{r.choice(EN_CAMERA)}; {r.choice(EN_STYLE)}.",
            f"The scene is set {r.choice(EN_PLACES)}{dash}{r.choice(EN_SUBJECTS)} {r.choice(EN_ACTIONS)}{ell}",
        ])
        parts.append(s)
    return " ".join(parts)


def _zh(r, n=None):
    out = []
    for _ in range(n or r.randint(1, 4)):
        bits = [r.choice(ZH_SUBJECTS) + r.choice(ZH_PLACES) + r.choice(ZH_ACTIONS)]
        bits += r.sample(ZH_STYLE, r.randint(1, 3))
        out.append("，".join(bits) + r.choice(ZH_PUNCT_END))
    return "".join(out)


def _ja(r):
    s = "".join(r.sample(JA_SENTENCES, r.randint(1, 3)))
    if r.random() < 0.5:
        s = s.replace("カメラ", "ｶﾒﾗ").replace("スローモーション", "ｽﾛｰﾓｰｼｮﾝ").replace("ロボット", "ﾛﾎﾞｯﾄ")
    if r.random() < 0.4:
        s += r.choice(JA_HALF_PUNCT[1:2]) + r.choice(JA_HALFWIDTH) + r.choice(JA_HALF_PUNCT[:1])
    if r.random() < 0.2:
        s = "｢" + r.choice(JA_HALFWIDTH) + "｣" + s
    return s


def _mojibake(s, codec):
    b = s.encode("utf-8")
    if codec == "sloppy-1252":  # windows-1252 with its five holes kept as the C1 control of that byte
        return "".join(bytes([c]).decode("cp1252") if c not in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else chr(c) for c in b)
    return b.decode(codec, errors="replace")


def _zalgo(r, s, k):
    return "".join(c + "".join(r.choice(COMBINING) for _ in range(r.randint(0, k))) for c in s)


def _halfwidth_to_fullwidth(s):
    return "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else ("\u3000" if c == " " else c) for c in s)


def _generators():
    """category -> (count, function(rng) -> text)."""
    g = {}
    g["latin"] = (260, lambda r: _en_scene(r) if r.random() < 0.7 else
                  " ".join(r.sample(EU_SENTENCES, r.randint(1, 3))))
    g["cjk"] = (200, lambda r: _zh(r) if r.random() < 0.85 else
                r.choice(["繁體中文：一位穿著旗袍的女子在臺北的雨夜中漫步。", "粵語：佢喺銅鑼灣行緊街，好靚呀！",
                          "文言：白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"]) + _zh(r, 1))
    g["japanese"] = (150, _ja)
    g["korean"] = (120, lambda r: (lambda s: unicodedata.normalize("NFD", s) if r.random() < 0.2 else s)(
        " ".join(r.sample(KO_SENTENCES, r.randint(1, 3)))))
    g["cyrillic"] = (120, lambda r: (lambda s: unicodedata.normalize("NFD", s) if r.random() < 0.15 else s)(
        " ".join(r.sample(RU_SENTENCES, r.randint(1, 3)))))
    g["arabic"] = (100, lambda r: ("\u200f" if r.random() < 0.2 else "") + " ".join(r.sample(AR_SENTENCES, r.randint(1, 3))))
    g["devanagari"] = (100, lambda r: " ".join(r.sample(HI_SENTENCES, r.randint(1, 3))).replace(
        "क्ष", "क्\u200dष" if r.random() < 0.2 else "क्ष"))
    g["other_script"] = (80, lambda r: " ".join(r.sample(OTHER_SCRIPT_SENTENCES, r.randint(1, 2))))

    def emoji(r):
        k = r.randint(0, 5)
        if k == 0:
            return "".join(r.choice(EMOJI_BASE + ZWJ_SEQUENCES + FLAGS) for _ in range(r.randint(1, 8)))
        if k == 1:
            return " ".join(r.choice(EMOJI_PEOPLE) + r.choice(SKIN_TONES + [""]) for _ in range(r.randint(1, 6)))
        if k == 2:
            return _en_scene(r, 1) + " " + "".join(r.sample(EMOJI_BASE, 3)) + r.choice(FLAGS)
        if k == 3:
            return _zh(r, 1) + r.choice(ZWJ_SEQUENCES) + r.choice(KEYCAPS)
        if k == 4:
            return r.choice(["I ❤️ NY", "I ❤ NY", "I \u2764\ufe0e NY", "5⭐ hotel 🏨", "☕️ vs ☕", "✌🏻✌🏼✌🏽✌🏾✌🏿",
                             "🇯🇵🇰🇷🇨🇳", "🇦", "🇦🇧🇨", "👨\u200d", "\u200d👩", "🏻 alone", "a\ufe0fb"]) + " " + r.choice(KEYCAPS)
        return r.choice(EMOJI_PEOPLE) + r.choice(SKIN_TONES) + "\u200d" + r.choice(["💻", "🚀", "🎨", "🔬", "🍳"])
    g["emoji"] = (150, emoji)

    def combining(r):
        k = r.randint(0, 4)
        base = r.choice(EU_SENTENCES + ["café naïve résumé jalapeño Ångström", "Tiếng Việt có dấu: ỗ ẫ ặ ữ ự",
                                        "São Paulo, Zürich, Kraków, Reykjavík"])
        if k == 0:
            return unicodedata.normalize("NFD", base)
        if k == 1:
            return _zalgo(r, r.choice(["glitch", "HORROR", "spooky text", "zalgo"]), 3)
        if k == 2:
            return "e\u0301 vs é, a\u030a vs å, n\u0303 vs ñ, \u0301 at start, space \u0301 mark, Å vs \u212b vs Å"
        if k == 3:
            return unicodedata.normalize("NFKD", base) + " " + "".join(r.choice("aeiou") + r.choice(COMBINING) for _ in range(6))
        return "q\u0323\u0307 x\u0302\u0323 ṩ s\u0323\u0307 s\u0307\u0323 — ordering of marks; Ǆ ǅ ǆ; ﬀ"
    g["combining"] = (100, combining)

    def width(r):
        k = r.randint(0, 5)
        if k == 0:
            return _halfwidth_to_fullwidth(_en_scene(r, 1))
        if k == 1:
            return "ｶﾀｶﾅ " + r.choice(JA_HALFWIDTH) + " ﾊﾞﾋﾞﾌﾞﾍﾞﾎﾞ ﾊﾟﾋﾟﾌﾟﾍﾟﾎﾟ ｳﾞ ｰ｡｢｣､･ ﾞ ﾟ"
        if k == 2:
            return r.choice(["The ﬁrst ﬂower ﬁeld", "ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ", "oﬃce staﬀ", "Ĳssel ĳs", "ǈudi Ǌ ǌ",
                             "ﬁ—ﬂ—ﬁ", "œuvre Œ æ Æ"]) + " " + _en_scene(r, 1)
        if k == 3:
            return r.choice(["①②③ ⑴ ⒜ Ⅻ ⅻ ㎞ ㎏ ㏄ ℃ ℉ № ™ ½ ¾ ² ³ ⁴ ₁ ₂", "Ｈｅｌｌｏ，　Ｗｏｒｌｄ！　１２３",
                             "ｈｔｔｐｓ：／／ｅｘａｍｐｌｅ．ｃｏｍ", "￥１００　￡５　￠　￤　￢　￣", "㍻ ㍼ ㋿ ㈱ ㊙ 🈚 🅰"])
        if k == 4:
            return _zh(r, 1).replace("，", ",").replace("。", ".") + "（ＦＵＬＬ－ＷＩＤＴＨ）［４Ｋ］"
        return "ﾐｸ" + _halfwidth_to_fullwidth("Miku 39!") + " ＂quoted＂ ＇single＇ ｀back｀ ～ 〜"
    g["width"] = (100, width)

    def html_(r):
        k = r.randint(0, 4)
        if k == 0:
            return _en_scene(r, 2).replace("’", "&#8217;").replace("“", "&ldquo;").replace("”", "&rdquo;").replace(
                "—", "&mdash;").replace("…", "&hellip;").replace("é", "&eacute;")
        if k == 1:
            return " ".join(r.choice(HTML_NAMED + HTML_NUMERIC + HTML_ODD) for _ in range(r.randint(2, 8)))
        if k == 2:
            return "<b>" + r.choice(HTML_NAMED) + "bold</b> <i>" + r.choice(HTML_NUMERIC) + "</i> &lt;br&gt; " + r.choice(HTML_ODD)
        if k == 3:
            return r.choice(["Tom &amp; Jerry&#8217;s &quot;chase&quot; &hellip; &check; done", "caf&eacute; &amp;amp; cr&egrave;me",
                             "&lt;extra_id_0&gt; &amp;lt;/s&amp;gt;", "&amp;amp;quot;x&amp;amp;quot;", "5 &gt; 3 &amp;&amp; 2 &lt; 4",
                             "&#x4E2D;&#x6587; &#20013;&#25991;", "&#x1F525;&#x1F525; fire"])
        return _zh(r, 1) + r.choice(HTML_NAMED + HTML_NUMERIC) + "“慢动作”&amp;" + r.choice(ZH_STYLE)
    g["html"] = (150, html_)

    def mojibake(r):
        src = r.choice([_en_scene(r, 1), r.choice(EU_SENTENCES), "café", "“Café Noir”", "naïve résumé", "It’s…",
                        _zh(r, 1), "“慢动作”", r.choice(RU_SENTENCES), "🔥 emoji 🎬", r.choice(JA_SENTENCES)])
        k = r.randint(0, 6)
        if k == 0:
            return _mojibake(src, "sloppy-1252")
        if k == 1:
            return _mojibake(src, "latin-1")
        if k == 2:
            return _mojibake(_mojibake(src, "sloppy-1252"), "sloppy-1252")  # doubled
        if k == 3:
            return _mojibake(src, "mac_roman")
        if k == 4:
            return src + " / " + _mojibake(src, "sloppy-1252")  # half fixed, half broken
        if k == 5:
            return r.choice(["cafÃ©", "â€œhelloâ€\x9d", "Ã¢â‚¬Å“doubledÃ¢â‚¬\x9d", "donâ€™t", "Ã©tÃ©", "Ã\xa0 la",
                             "Ã  la", "â€”", "Ã¢â‚¬â€\x9d", "ðŸ”¥", "ðŸ\x98\x80", "Â£5", "Â\xa0", "Ã‰cole", "Ð¼Ð¾Ñ\x81ÐºÐ²Ð°",
                             "æ…¢åŠ¨ä½œ", "ã\x81‚ã\x82Š", "Ã\u0083Â©", "â\x80\x9cquoteâ\x80\x9d", "Ã¼ber Ã¤ Ã¶"])
        return _mojibake(src, "sloppy-1252").replace("€", "&euro;") + " &amp; " + _mojibake("naïve", "latin-1")
    g["mojibake"] = (150, mojibake)

    def control(r):
        k = r.randint(0, 3)
        s = _en_scene(r, 1) if r.random() < 0.6 else _zh(r, 1)
        if k == 0:
            i = r.randint(0, len(s))
            return s[:i] + "".join(r.choice(CONTROLS) for _ in range(r.randint(1, 3))) + s[i:]
        if k == 1:
            return r.choice(TERMINAL) + s + r.choice(TERMINAL)
        if k == 2:
            return "".join(c + (r.choice(CONTROLS) if r.random() < 0.08 else "") for c in s)
        return r.choice(["\x1b[1mbold\x1b[22m \x1b[31mred\x1b[39m", "NUL\x00in\x00the\x00middle", "bell\x07\x07",
                         "back\x08\x08space", "\x1c\x1d\x1e\x1fseparators\x1f", "\ufeffBOM start", "mid\ufeffBOM",
                         "zero\u200bwidth\u200bspace", "rtl \u202eoverride\u202c end", "x\x85y", "\x80\x81\x9d\x9f c1",
                         "soft\u00adhy\u00adphen", "\ufffd replacement \ufffd", "word\u2060joiner", "\x7fdel\x7f"])
    g["control"] = (120, control)

    def whitespace(r):
        k = r.randint(0, 3)
        s = _en_scene(r, 1) if r.random() < 0.6 else _zh(r, 1)
        if k == 0:
            return re.sub(" ", lambda m: r.choice(WHITESPACE + [" "] * 6), s)
        if k == 1:
            return "".join(r.choice(WHITESPACE) for _ in range(r.randint(1, 3))) + s + "".join(
                r.choice(WHITESPACE) for _ in range(r.randint(1, 3)))
        if k == 2:
            return s.replace(". ", ".\r\n\r\n").replace("，", "，\r\n") + "\r\n"
        return r.choice(["", " ", "\t", "\r\n", "\u3000", "\u00a0", "\u200b", "\u2028\u2029", "  \n\t\r  ",
                         "a", ".", "a  b", "a\tb", "a\u00a0\u00a0b", "a \u200b b", "a\u3000b", "a\u0085b",
                         "a\u180eb", "a\x1cb", "a\x1fb", "tab\tseparated\tvalues", "line1\rline2\rline3"])
    g["whitespace"] = (100, whitespace)

    def special(r):
        k = r.randint(0, 3)
        if k == 0:
            s = _en_scene(r, 1).split(" ")
            i = r.randint(0, len(s))
            return " ".join(s[:i] + [r.choice(SPECIAL)] + s[i:])
        if k == 1:
            return "".join(r.choice(SPECIAL) + r.choice(["", " ", "x", "  ", "。"]) for _ in range(r.randint(1, 5)))
        if k == 2:
            return r.choice(["a cat<extra_id_0>b", "<extra_id_0>. Hello", "Hello </s> world </s>", "</s></s></s>",
                             "<pad><pad> padding", "<unk> unknown <unk>", "<s>start", "end</s>", "<extra_id_1><extra_id_0>",
                             "x <extra_id_299> y <extra_id_300> z", "A red fox</s>", " </s> ", "<<extra_id_0>>",
                             "<extra_id_0>慢动作<extra_id_1>", "&lt;/s&gt; escaped eos", "＜／ｓ＞ full-width eos"])
        return _zh(r, 1) + r.choice(SPECIAL) + _zh(r, 1)
    g["special_tokens"] = (120, special)

    def rare(r):
        k = r.randint(0, 2)
        if k == 0:
            return _zh(r, 1)[:-1] + r.choice(RARE) + "。"
        if k == 1:
            return "".join(r.choice(RARE) for _ in range(r.randint(1, 4)))
        return _en_scene(r, 1) + " " + r.choice(RARE) + r.choice(RARE) + " end"
    g["rare"] = (80, rare)

    def long_(r):
        k = r.randint(0, 4)
        if k == 0:
            return _en_scene(r, r.randint(18, 40))  # roughly 350 to 900 tokens
        if k == 1:
            return _zh(r, r.randint(15, 40))
        if k == 2:
            return " ".join([_en_scene(r, 3), _zh(r, 5), _ja(r), " ".join(KO_SENTENCES), " ".join(RU_SENTENCES)])
        if k == 3:
            return "".join(r.choice(EMOJI_BASE + ZWJ_SEQUENCES) for _ in range(r.randint(300, 700)))
        return " ".join(["word"] * r.randint(505, 515))  # around the truncation edge
    g["long"] = (60, long_)

    def mixed(r):
        pieces = [lambda: _en_scene(r, 1), lambda: _zh(r, 1), lambda: _ja(r), lambda: r.choice(KO_SENTENCES),
                  lambda: r.choice(RU_SENTENCES), lambda: r.choice(AR_SENTENCES), lambda: r.choice(HI_SENTENCES),
                  lambda: r.choice(EMOJI_BASE + ZWJ_SEQUENCES + FLAGS), lambda: r.choice(HTML_NAMED + HTML_NUMERIC),
                  lambda: _mojibake(r.choice(["café", "“quoted”", "it’s"]), "sloppy-1252"), lambda: r.choice(WHITESPACE),
                  lambda: r.choice(SPECIAL), lambda: r.choice(RARE), lambda: r.choice(CONTROLS + TERMINAL),
                  lambda: _halfwidth_to_fullwidth("4K HDR"), lambda: r.choice(JA_HALFWIDTH)]
        return r.choice([" ", "", "，", " — "]).join(r.choice(pieces)() for _ in range(r.randint(2, 6)))
    g["mixed"] = (160, mixed)
    return g


def _negative_prompts():
    base = [WAN22_NEG, WAN22_S2V_NEG, DIFFUSERS_NEG, WAN21_EN_NEG] + _preset_negative_prompts()
    base = list(dict.fromkeys(base))
    out = list(base)
    for s in base:
        out += [s + "，", "  " + s + "  ", s.replace("，", "，\r\n"), s.replace("，", ", "), s + ", " + DIFFUSERS_NEG,
                s.replace("，", "&#xFF0C;"), s.replace("，", " , ").replace(",", "  ,")]
    out += ["", "blurry, low quality, static", "色调艳丽，过曝", "worst quality, low quality, “watermark”, ‘text’, logo…"]
    return out


def build_corpus(seed=SEED):
    seen = {}
    out = []

    def add(cat, text):
        if text not in seen:
            seen[text] = cat
            out.append((cat, text))

    for text in _negative_prompts():
        add("negative_prompt", text)
    # Around the truncation edge (umt5: one piece per "word"): 510 words and </s> fill 511, 511 fill 512, more are cut.
    for n in range(509, 514):
        add("long", " ".join(["word"] * n))
    for cat, (count, fn) in _generators().items():
        r = random.Random(f"{seed}/{cat}")
        made, tries = 0, 0
        while made < count and tries < count * 20:
            tries += 1
            text = fn(r)
            if text not in seen:
                add(cat, text)
                made += 1
    return out


def training_sentences(seed=SEED + 1, per_category=400):
    """Other texts of the script generators, one per line (no line breaks inside), to train a SentencePiece
    model on: latin, cjk, japanese, korean, cyrillic, arabic, devanagari, other_script, emoji, mixed, width."""
    gens = _generators()
    lines = []
    for cat in ["latin", "cjk", "japanese", "korean", "cyrillic", "arabic", "devanagari", "other_script", "emoji",
                "mixed", "width", "combining"]:
        r = random.Random(f"{seed}/{cat}")
        for _ in range(per_category):
            t = " ".join("".join(c for c in gens[cat][1](r) if unicodedata.category(c) != "Cc").split())
            if t:
                lines.append(t)
    lines += [WAN22_NEG, WAN22_S2V_NEG, DIFFUSERS_NEG, WAN21_EN_NEG]
    # The templates repeat themselves: pseudo-words of each script give the model enough distinct pieces for a
    # vocabulary of ~8000 (common CJK ideographs and Hangul syllables, Latin/Cyrillic/Greek/Devanagari syllables).
    r = random.Random(f"{seed}/pseudo")
    syl = {
        "latin": ("bcdfghjklmnprstvwzßçñ", "aeiouyéèêàäöüåø"), "cyrillic": ("бвгджзклмнпрстфхцчшщ", "аеёиоуыэюяй"),
        "greek": ("βγδζθκλμνξπρστφχψ", "αεηιουωάέήίόύώ"), "devanagari": ("कखगघचछजझटठडढतथदधनपफबभमयरलवशषसह", "ािीुूेैोौंः्"),
    }
    for _ in range(3000):
        k = r.randint(0, 5)
        if k < 4:
            cons, vow = list(syl.values())[k]
            words = ["".join(r.choice(cons) + r.choice(vow) for _ in range(r.randint(1, 4))) for _ in range(r.randint(4, 12))]
            lines.append(" ".join(words))
        elif k == 4:
            lines.append("".join(chr(0x4E00 + int(r.triangular(0, 2500, 0))) for _ in range(r.randint(10, 40))))
        else:
            lines.append(" ".join("".join(chr(0xAC00 + int(r.triangular(0, 1000, 0))) for _ in range(r.randint(1, 4)))
                                  for _ in range(r.randint(4, 12))))
    return lines


corpus = build_corpus()


def main():
    out = sys.stdout
    for cat, text in corpus:
        out.write(json.dumps({"category": cat, "text": text}, ensure_ascii=True) + "\n")
    if "--counts" in sys.argv[1:]:
        counts = {}
        for cat, _ in corpus:
            counts[cat] = counts.get(cat, 0) + 1
        print(json.dumps(counts), file=sys.stderr)


if __name__ == "__main__":
    main()
